"""The student path: starter bots (`arena new`), checking a bot before a tournament, playing it yourself."""
