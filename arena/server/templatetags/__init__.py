"""The classroom templates' own tags: times.py (a time in the reader's zone)."""
