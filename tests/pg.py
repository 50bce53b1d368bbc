"""The tests' throwaway PostgreSQL: ``scripts.pg_cluster.PgCluster`` (the same the arena try-out
starts), a cluster in a temp folder on a free port of 127.0.0.1, gone when the session ends."""

from scripts.pg_cluster import PgCluster

__all__ = ["PgCluster"]
