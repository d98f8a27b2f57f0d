"""A tournament's store: one SQLite file, its schema and one writer (writer.py), and the read queries
(queries.py). These two are the only modules that speak SQL."""
