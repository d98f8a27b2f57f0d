"""`arena serve`: a class on one server. Students sign in, upload bots from a web page (or `arena submit`),
each version is built and checked by `arena check` in the sandbox, and the active versions play a ladder
that never stops; at the deadline the frozen versions play a final settled tournament and the teacher
downloads the gradebook.

The web side is a Django project (settings.py, urls.py) and its one app (models, views, templates) under
a real application server (gunicorn); the games are arena's own tournaments, played by the worker
(worker.py) in the class folder. Django and gunicorn come with the optional extra `arena[server]`: nothing
else in arena imports this package, so `arena run` stays as light as it was. This module imports nothing,
so that the plain-Python parts (unpack.py, client.py) work without the extra.
"""

EXTRA_HINT = "the server needs its extra: pip install 'arena[server]'"
