"""A student's versions: an upload received and unpacked, made a version, built and checked."""
