"""The pages, by who they are for: common.py (the front door, errors, and the one guard for a page that
needs the class: in_class), accounts.py (sign-in, joining, the teacher's first link), student.py (one's own
versions), games.py (the ladder, the final, bot pages, replays), scrimmages.py (a student's unranked games),
teacher.py (running the class), api.py (`arena submit`). What is not a page lives beside them in
arena/server/: accounts.py, access.py (who asks, by session or token, and what they see), uploads.py
(a request's upload stored as a version), checking.py, scrimmages.py and the rest."""
