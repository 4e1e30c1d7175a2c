"""kenning: one local memory that every coding agent on a machine shares."""
