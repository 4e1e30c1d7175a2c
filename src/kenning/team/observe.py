"""What the team server tells its operator: JSON log lines and Prometheus metrics.

Logs are one JSON object a line on stderr (`ts`, `level`, `logger`, `msg` and the
request's fields), uvicorn's own lines included, so a log shipper reads them as they
are. Metrics are counted in process and written in Prometheus' text format by
`/metrics`: requests by route and status, a latency histogram by route, and the
memories pushed and the changes pulled.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from typing import Any

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
FIELDS = ("port", "method", "route", "path", "status", "ms", "workspace", "token_id", "error")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def setup_logging(level: int = logging.INFO) -> None:
    """Every logger's lines as JSON on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


def _labels(**labels: str) -> str:
    inner = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels.items()
    )
    return "{" + inner + "}"


class Metrics:
    """Counters and a histogram, safe to update from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, int], int] = {}
        self.latency: dict[str, list[int]] = {}  # route -> counts per bucket, then +Inf
        self.latency_sum: dict[str, float] = {}
        self.pushed: dict[str, int] = {}  # stored, duplicate, refused
        self.pulled = 0
        self.started = time.time()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            key = (method, route, status)
            self.requests[key] = self.requests.get(key, 0) + 1
            counts = self.latency.setdefault(route, [0] * (len(BUCKETS) + 1))
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            counts[-1] += 1
            self.latency_sum[route] = self.latency_sum.get(route, 0.0) + seconds

    def count_push(self, results: list[dict[str, Any]]) -> None:
        with self._lock:
            for result in results:
                self.pushed[result["status"]] = self.pushed.get(result["status"], 0) + 1

    def count_pull(self, changes: int) -> None:
        with self._lock:
            self.pulled += changes

    def render(self) -> str:
        with self._lock:
            lines = [
                "# HELP ken_http_requests_total HTTP requests by route and status.",
                "# TYPE ken_http_requests_total counter",
            ]
            for (method, route, status), n in sorted(self.requests.items()):
                labels = _labels(method=method, route=route, status=str(status))
                lines.append(f"ken_http_requests_total{labels} {n}")
            lines += [
                "# HELP ken_http_request_seconds Time to answer a request, by route.",
                "# TYPE ken_http_request_seconds histogram",
            ]
            for route, counts in sorted(self.latency.items()):
                for bound, n in zip((*map(str, BUCKETS), "+Inf"), counts, strict=True):
                    labels = _labels(route=route, le=bound)
                    lines.append(f"ken_http_request_seconds_bucket{labels} {n}")
                lines.append(
                    f"ken_http_request_seconds_sum{_labels(route=route)} "
                    f"{self.latency_sum[route]:.6f}"
                )
                lines.append(f"ken_http_request_seconds_count{_labels(route=route)} {counts[-1]}")
            lines += [
                "# HELP ken_pushed_total Pushed entries by result.",
                "# TYPE ken_pushed_total counter",
            ]
            for result in ("stored", "duplicate", "refused"):
                lines.append(
                    f"ken_pushed_total{_labels(result=result)} {self.pushed.get(result, 0)}"
                )
            lines += [
                "# HELP ken_pulled_changes_total Changes answered to pulls.",
                "# TYPE ken_pulled_changes_total counter",
                f"ken_pulled_changes_total {self.pulled}",
                "# HELP ken_start_time_seconds When this server started.",
                "# TYPE ken_start_time_seconds gauge",
                f"ken_start_time_seconds {self.started:.3f}",
            ]
        return "\n".join(lines) + "\n"
