"""mindcore.batch: long-term memory for many users at once (bulk ingest)."""

from mindcore.batch.remember import BulkReport, remember

__all__ = ["BulkReport", "remember"]
