"""The tournament: its settings, the schedule, and the run on a back end (this machine's cores; a lab:
arena/lab)."""
