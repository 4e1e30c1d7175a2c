"""The words of software work that stand for each other, the broader words that name
kinds of a thing, and the phrases people type for a single word.

Written from general knowledge of how developers speak and what tools do, by area,
never to fit one memory or one prompt. Three tables:

- SYNONYMS: groups of words used for each other ("db", database; "stub", mock). Every
  pair in a group matches, at the synonym weight.
- KINDS: a broad word and the words for kinds or tools of it ("database: postgres
  mysql sqlite ..."). The broad word and each kind match each other, at a lower weight;
  two kinds do not ("postgres" never stands for "mysql").
- PHRASES: two or three words typed for one idea ("kick off" is start, "roll back" is
  revert). When the prompt holds the phrase, its content word also matches the words
  the phrase stands for.

Words are stemmed the way the index stems them when the tables are read, so one form of
a word is enough ("mock" also stands for "mocked" and "mocking"). Spelling variants
(optimise, optimize) are handled by rule in the recall module, not listed.
"""

from __future__ import annotations


def _groups(text: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(g.split()) for g in text.replace("\n", " ").split("|") if g.strip())


def _stars(text: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    out = []
    for line in text.replace("\n", " ").split("|"):
        if line.strip():
            head, _, kinds = line.partition(":")
            out.append((frozenset(head.split()), frozenset(kinds.split())))
    return tuple(out)


def _phrases(text: str) -> tuple[tuple[tuple[str, ...], frozenset[str]], ...]:
    out = []
    for line in text.replace("\n", " ").split("|"):
        if line.strip():
            words, _, means = line.partition("=")
            out.append((tuple(words.split()), frozenset(means.split())))
    return tuple(out)


SYNONYMS = _groups(
    """
    db database databases dbs|prod production|repo repos repository repositories
    |auth authentication authenticate authenticated login logins signin logon
    |authz authorization permission permissions privileges entitlement entitlements
    |deps dependency dependencies dep|config configs configuration configurations
    settings setting cfg conf configure configured|env envs environment environments
    |k8s kubernetes kube|integ integration integrations|msg msgs message messages
    |pr prs mr mrs|infra infrastructure|perf performance|doc docs documentation
    |btn button buttons|img image images pic pics picture pictures
    |svc service services microservice microservices|fn func function functions
    |var vars variable variables|arg args argument arguments param params parameter
    parameters|err error errors|tz timezone timezones|i18n l10n translation
    translations localization localisation internationalization translate
    |a11y accessibility accessible|lib libs library libraries
    |pkg pkgs package packages|dir dirs directory directories folder folders
    |tmp temp temporary|impl implementation|req request requests|resp response
    responses reply|ts typescript|js javascript|py python|golang go|bq bigquery
    |gh github|acct account accounts|num number|max maximum|min minimum
    |util utils utility utilities helper helpers|cred creds credential credentials
    |pwd password passwords passwd passphrase|toggle toggles flag flags feature
    |throttle throttling ratelimit ratelimiting|flaky flake flakes flakiness
    intermittent intermittently nondeterministic|spec specs test tests testing
    |log logs logging logger|mail email emails e-mail|upgrade upgrades bump bumps
    |remove delete erase purge|wipe flush clear|crash crashes crashing crashed
    segfault|app apps application applications|endpoint endpoints route routes
    |job jobs task tasks|cache caches caching cached memoize memoise|lint linter
    linting lints|notif notifs notification notifications|sub subs subscription
    subscriptions|mock mocks mocking mocked stub stubs stubbing fake fakes faking
    double doubles spy spies|deploy deploys deployed deploying deployment deployments
    release releases ship shipping shipped rollout|dupe dupes duplicate duplicates
    dedupe dedup deduplicate deduplication duplicated twice|tbl table tables|col cols
    column columns|idx index indexes indices|migration migrations migrate
    |dev development|mem memory ram|prev previous|sec security|vuln vulnerability
    vulnerabilities cve cves|fe frontend|be backend|ui interface gui
    |slow sluggish laggy lag latency|fast faster speed speedup quicker optimize
    optimizing optimization|gen generate generated regen regenerate codegen
    |bug bugs defect defects|fix fixes hotfix patch|issue issues problem
    |exception exceptions throw thrown raise raised|warn warning warnings
    |fail fails failing failure failures failed broken breaks breaking
    |start starts started begin launch boot|stop stops halt shutdown
    |restart restarts reboot relaunch|kill killed terminate terminated
    |timeout timeouts deadline deadlines|retry retries retried retrying backoff
    |run runs execute executes invoke|install installs installed installation setup
    |uninstall remove|rename renamed|refactor refactoring restructure rewrite
    cleanup tidy|revert reverts rollback undo|merge merges merged merging
    |rebase rebasing|commit commits committed|branch branches|tag tags label labels
    |review reviews reviewer reviewers approve approval approvals approved lgtm
    |ticket tickets jira story stories|doc docs readme wiki handbook guide guides
    manual runbook runbooks playbook playbooks|adr adrs rfc rfcs
    |owner owners owns own maintainer maintainers maintains responsible
    |team teams squad squads|meeting meetings standup
    |incident incidents outage outages downtime|postmortem postmortems retro
    retrospective|oncall pager paging|alert alerts alerting alarm alarms
    |dashboard dashboards|metric metrics measurement measurements telemetry
    |trace traces tracing span spans|monitor monitors monitoring observability
    |healthcheck healthchecks liveness readiness probe probes|uptime availability
    |benchmark benchmarks bench benchmarking|profile profiling profiler flamegraph
    |bottleneck bottlenecks hotspot hotspots|throughput qps rps tps
    |oom outofmemory|leak leaks leaking leaked|cpu processor
    |disk storage volume volumes|container containers docker
    |cluster clusters|nodes host hosts server servers machines vm vms
    instance instances box|scale scaling autoscale autoscaling autoscaler replicas
    |lb loadbalancer balancer|dns domain domains hostname|cdn edge
    |tls ssl https cert certs certificate certificates
    |secret secrets apikey apikeys token tokens|vault keychain keystore
    |encrypt encrypted encryption cipher|hash hashed hashing digest checksum
    |sanitize sanitise escape escaping|xss injection sqli
    |pii gdpr privacy personal anonymize anonymise anonymization pseudonymize
    |queue queues queued enqueue backlog|topic topics channel channels stream streams
    |pubsub broker brokers messaging|consumer consumers subscriber subscribers
    |producer producers publisher publishers publish|event events
    |cron crontab schedule scheduled scheduler periodic|nightly overnight night
    evening midnight|daily everyday|hourly|weekly|monthly
    |worker workers background|batch batches bulk batching|webhook webhooks|api apis
    |rest restful|rpc grpc|graphql gql|http https
    |url urls link links uri|path paths|port ports|socket sockets|ws websocket websockets
    |cors preflight|cookie cookies|session sessions|jwt bearer
    |sso saml oidc openid|oauth oauth2|permission acl rbac role roles
    |user users customer customers client clients|admin admins superuser staff
    backoffice|tenant tenants org orgs organization organizations workspace
    |row rows record records entry entries|field fields attribute attributes
    property properties prop props|schema schemas|query queries sql
    |orm activerecord|transaction transactions tx txn atomic|deadlock deadlocks
    |lock locks locking locked mutex|replica replicas replication standby follower
    |backup backups snapshot snapshots dump dumps restore|pool pooling pgbouncer
    |fk foreignkey|pk primarykey|null nil none undefined nullable
    |bool boolean|int integer integers|str string strings text|float double decimal
    |list lists array arrays slice slices vector vectors|dict dicts map maps hashmap
    dictionary|enum enums|struct structs|class classes type types
    |interface interfaces protocol protocols trait traits|generic generics
    |async asynchronous await|synchronous blocking|thread threads threading
    |concurrency concurrent parallel parallelism|goroutine goroutines
    |callback promise promises future futures|closure closures lambda lambdas
    |annotation annotations hint hints typing typed|typecheck typechecker
    typechecking|format formatter formatting formatted|comment comments docstring
    docstrings|name names naming identifier identifiers|readable readability
    legible|unused dead|todo todos fixme|deprecate deprecated deprecation obsolete
    |legacy old outdated stale staleness|fresh freshness recent latest
    |small little tiny minor|big large huge massive|multiple several
    |identical equal|different differ distinct|empty blank
    |missing absent lacks lacking|wrong incorrect bad|correct proper
    |safe safely safety|unsafe dangerous risky risk|secure securely
    |quick quickly|simple simpler easy|complex complicated
    |cost costs price pricing expensive cheap|money amount amounts
    |cent cents penny pennies|invoice invoices bill bills billing
    |pay payment payments paid charge charges checkout|refund refunds chargeback
    |tax taxes vat|discount discounts coupon coupons promo
    |currency currencies fx|price prices
    |date dates datetime datetimes timestamp timestamps|time times clock
    |dst daylight|utc gmt|calendar calendars
    |upload uploads uploaded|download downloads downloaded|import imports imported
    ingest|export exports exported|csv spreadsheet excel xlsx
    |report reports reporting|pdf pdfs document documents
    |screen screens page pages view views|modal modals dialog dialogs popup popups
    |form forms|input inputs|dropdown select picker|checkbox checkboxes
    |style styles styling css stylesheet|theme themes|font fonts typography
    |icon icons|layout layouts|responsive mobile|animation animations transition
    |render renders rendering rendered display displays|component components widget
    widgets
    |phone phones mobile smartphone|ios iphone ipad|android
    |emulator emulators simulator simulators|device devices
    |appstore playstore|beta testflight
    |sign signing signed signature signatures|apk aab bundle
    |shell bash zsh sh terminal console cli commandline|sudo root
    |script scripts|command commands cmd|alias aliases
    |mac macos macbook osx|laptop desktop workstation machine
    |editor ide vscode vim emacs neovim|keybinding keybindings shortcut shortcuts
    |repo monorepo|submodule submodules|gitignore ignore ignored
    |diff diffs patch|conflict conflicts
    |hook hooks precommit
    |changelog changelogs|version versions versioning semver
    |pin pinned pinning lockfile lockfiles|vendor vendored vendoring
    |build builds compile compiles compiled compiling compilation|binary binaries
    executable|artifact artifacts|bundle bundler bundling|minify minified
    minification obfuscate obfuscation|sourcemap sourcemaps symbol symbols
    |ci pipeline pipelines workflow workflows|cd delivery
    |stage staging preprod uat|sandbox sandboxes|local locally localhost
    |remote remotely|regression regressions|coverage covered uncovered
    |fixture fixtures factory factories seed seeds|assert asserts assertion
    assertions expect expectation|e2e endtoend|unit unittest unittests
    |snapshot snapshots golden|parametrize parametrise parameterize
    |data dataset datasets|pipeline etl elt|warehouse lakehouse
    |column field|backfill backfills
    backfilling|partition partitions partitioned sharding shard shards
    |aggregate aggregates aggregation rollup
    |scared afraid frightened terrified|shop store|exam exams test
    |finish finished complete completed|explain explanation
    |example examples sample samples|demo demos|prototype prototypes poc spike
    |estimate estimates estimation|deadline due|priority priorities urgent
    |weekend weekends|holiday holidays vacation pto leave|sick ill
    |happy glad pleased delighted|sad upset unhappy|angry mad furious annoyed
    |tired exhausted sleepy|worried anxious nervous|excited thrilled
    |cheap inexpensive|expensive pricey costly|house home|flat apartment
    |car vehicle|bike bicycle|trip travel journey|movie film|book novel
    |doctor physician gp|wedding marriage married marry|baby babies infant newborn
    |dog puppy pup|cat kitten|kid kids child children|mom mum mother mommy mummy
    |dad father daddy|grandma grandmother gran granny nan nana|grandpa grandfather
    grandad granddad|friend mate buddy pal|gift present presents gifts
    |job career occupation profession|salary pay wage wages income
    |hurt injured injury|class course lesson lessons classes courses
    |quit resign resigned|move moved moving relocate relocated relocating
    |exam exams|dinner supper|meal meals food|restaurant cafe|jog jogging jogger
    |gym workout exercise|hobby hobbies pastime|music song songs|paint painting
    |photo photos photograph photography|garden gardening|cook cooking bake baking
    """
)

KINDS = _stars(
    """
    database db: postgres postgresql pg mysql mariadb sqlite mongo mongodb dynamodb
    cassandra redis bigquery snowflake redshift clickhouse elasticsearch opensearch
    cockroachdb spanner firestore supabase aurora rds
    |cache: redis memcached varnish
    |queue broker: kafka rabbitmq sqs sns nats jetstream pubsub kinesis celery
    sidekiq resque rq bullmq activemq
    |worker background job: celery sidekiq resque rq bullmq temporal airflow
    dagster prefect cron
    |orchestrator orchestration: airflow dagster prefect temporal argo luigi
    |kubernetes k8s cluster: eks gke aks k3s minikube openshift helm kubectl pod
    pods daemonset statefulset ingress karpenter keda
    |container docker: podman containerd dockerfile buildkit
    |cloud: aws gcp azure digitalocean hetzner linode heroku vercel netlify
    cloudflare
    |storage bucket: s3 gcs blob minio
    |serverless: lambda cloudfunctions
    |iac infrastructure: terraform terragrunt pulumi cloudformation cdk ansible
    chef puppet
    |deploy release: argocd argo flux spinnaker kamal capistrano helm heroku
    vercel netlify
    |ci pipeline: jenkins circleci travis buildkite gitlab githubactions teamcity
    |vcs git: github gitlab bitbucket gitea
    |test tests testing: pytest unittest jest vitest mocha jasmine junit testng
    rspec minitest xctest xcuitest espresso robolectric playwright cypress
    selenium puppeteer testcontainers hypothesis
    |e2e browser: playwright cypress selenium puppeteer webdriver
    |mock fake: mockito mockk nock msw wiremock sinon testdouble
    |lint linter: eslint ruff flake8 pylint rubocop golangci staticcheck clippy
    swiftlint ktlint detekt stylelint shellcheck hadolint tflint checkstyle
    spotbugs sonar
    |format formatter: prettier black ruff gofmt goimports rustfmt ktfmt
    swiftformat yapf isort
    |typecheck types typing: mypy pyright pyre typescript tsc flow sorbet
    |package dependency: npm yarn pnpm pip pipenv poetry uv conda cargo gem
    bundler composer maven gradle nuget cocoapods spm carthage gomod
    |build: makefile cmake bazel gradle maven webpack vite esbuild rollup
    turbopack parcel babel swc tsc cargo
    |frontend ui web: react vue svelte angular nextjs nuxt remix astro htmx
    hotwire turbo stimulus jquery tailwind
    |backend server api: django flask fastapi rails express nestjs spring
    springboot laravel symfony phoenix actix axum ktor aspnet
    |orm: sqlalchemy activerecord hibernate jpa prisma typeorm sequelize gorm
    diesel ecto eloquent doctrine room coredata jooq
    |migration migrations: alembic flyway liquibase goose atlas knex dbmate
    |log logging: slog zap logrus zerolog winston pino log4j logback lograge
    loguru structlog serilog timber
    |monitor monitoring observability: datadog grafana prometheus newrelic
    honeycomb jaeger tempo loki kibana splunk opentelemetry otel statsd cloudwatch
    |error errors crash: sentry bugsnag rollbar crashlytics honeybadger
    |alert oncall: pagerduty opsgenie victorops
    |chat: slack discord mattermost
    |docs: notion confluence wiki readme mkdocs sphinx docusaurus
    |ticket issue: jira asana trello
    |auth login: okta auth0 keycloak cognito clerk oauth saml sso jwt
    |secret secrets: vault 1password lastpass bitwarden doppler sops
    secretsmanager keychain keystore
    |payment payments: stripe paypal braintree adyen
    |email: sendgrid mailgun postmark ses mailchimp smtp
    |push notification: apns fcm firebase onesignal
    |search: elasticsearch opensearch algolia meilisearch typesense solr
    |analytics: mixpanel amplitude posthog looker metabase tableau superset
    |dashboard report: looker metabase tableau superset grafana powerbi
    |warehouse data: bigquery snowflake redshift databricks clickhouse dbt
    |json serialization: moshi gson jackson serde kotlinx pydantic marshmallow
    codable jsonschema
    |http: httpx aiohttp axios okhttp retrofit alamofire urllib urllib3 reqwest
    |cli: clap cobra typer argparse yargs picocli
    |template templates: jinja jinja2 erb handlebars mustache thymeleaf
    |ios apple mobile: swift swiftui uikit xcode cocoapods testflight fastlane
    |android mobile: kotlin gradle jetpack apk aab emulator playstore
    |python py: pip django flask fastapi pytest poetry uv mypy ruff
    |javascript js: npm yarn pnpm node nodejs deno bun typescript
    |ruby: rails gem bundler rspec rubocop sidekiq
    |java jvm: kotlin scala spring maven gradle junit
    |rust: cargo crate crates clippy rustc tokio
    |golang: gomod goroutine gofmt
    |editor ide: vscode vim neovim emacs intellij pycharm webstorm xcode
    androidstudio sublime
    |install: apt brew homebrew dnf yum pacman choco winget
    |profile performance perf: pprof flamegraph pyspy
    |benchmark bench performance: criterion hyperfine jmh benchmarkdotnet
    |performance perf speed: slow slower fast faster latency throughput
    bottleneck benchmark profile optimize
    |permission access: iam rbac acl policy policies role roles
    |network: vpn tailscale wireguard proxy firewall dns tunnel
    |certificate signing: keystore codesign notarize
    |translation i18n: gettext xliff catalog locale locales
    |delete remove: gone deleted softdelete tombstone
    |stale old: outdated expired cached
    |expiry expire: ttl expiration expires expired lifetime
    |duplicate dupe: repeated repeat twice
    |owner: lead leads expert contact
    |block blocker blocked: waiting depends holdup stuck
    |error exception: panic traceback stacktrace
    |incident: outage downtime sev postmortem
    |secret credential: password token apikey
    """
)

PHRASES = _phrases(
    """
    kick off=start run|kicks off=start run|kicked off=start run|spin up=start create
    |spun up=start create|fire up=start|boot up=start|start up=start startup
    |shut down=stop shutdown|tear down=teardown destroy delete
    |stub out=mock|mock out=mock|fake out=mock|patch out=mock
    |ship it=deploy release|go live=launch release deploy|push out=deploy release
    |cut a release=release
    |roll back=rollback revert|back out=revert rollback|undo it=revert
    |clean up=cleanup remove tidy|get rid=remove delete|throw away=delete
    |set up=setup configure install|hook up=connect integrate|wire up=connect
    |look up=lookup find|back up=backup|fall back=fallback|log in=login
    |logged in=login|sign in=login|signed in=login|log out=logout|sign out=logout
    |sign up=signup register|check in=commit|check out=checkout
    |hold up=block blocker|holding up=block blocker blocked|held up=block blocker
    |in charge=owner owns|point of contact=owner
    |fall over=crash fail|fell over=crash fail|falls over=crash fail
    |time out=timeout|timed out=timeout|times out=timeout|timing out=timeout
    |hang forever=timeout deadline hang|takes forever=slow timeout
    |too slow=slow performance|speed up=performance faster optimize
    |slow down=slow performance|run out=exhaust limit|ran out=exhaust limit
    |rate limit=ratelimit throttle|rate limited=ratelimit throttle
    |too many requests=ratelimit throttle|feature flag=flag toggle
    |pull request=pr|merge request=pr|code review=review|dry run=dryrun
    |hot fix=hotfix|end to end=e2e|unit test=unittest|type check=typecheck
    |type checking=typecheck mypy|type hint=annotation|type hints=annotation
    |on call=oncall|paged me=oncall page alert|dead letter=dlq
    |source of truth=canonical|single source=canonical|out of date=stale outdated
    |up to date=latest current|no longer=deprecated|going away=deprecated
    |write down=document doc|written down=document doc|wrote down=document doc
    |keep track=track|find out=investigate|figure out=investigate
    |same thing twice=duplicate|sent twice=duplicate|ran twice=duplicate
    |run twice=duplicate|double charged=duplicate charge|charged twice=duplicate
    charge|back office=admin backoffice|admin panel=admin|control panel=admin
    |signing key=keystore signing certificate
    |env var=environment variable config|env vars=environment variable config
    |environment variable=env config|command line=cli|build step=build
    |clean install=install|fresh install=install|npm install=install dependency
    |pip install=install dependency|add a dependency=dependency
    |no network=offline network|no internet=offline network
    |lost connection=offline network
    |page load=performance|cold start=startup performance
    |memory leak=leak memory|out of memory=oom memory|oom killed=oom memory
    |stack trace=stacktrace traceback
    |server error=error 500|not found=404 missing
    |personal data=pii privacy|right to be forgotten=gdpr erase|data retention=retention
    |sql query=query sql|raw sql=sql query
    |dark mode=theme|light mode=theme
    """
)
