"""The pages, by who they are for: common.py (the front door and errors), accounts.py (sign-in, joining,
the teacher's first link), student.py (one's own versions), games.py (the ladder, the final, replays),
scrimmages.py (a student's unranked games),
teacher.py (running the class), api.py (`arena submit`)."""
