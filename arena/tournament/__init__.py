"""The tournament: settings, the schedule played on worker processes, the store and the ratings."""
