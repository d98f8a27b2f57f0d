"""Every address the server answers. Who may ask is decided in the views (access.py); the authorization
tests (tests/test_server_access.py) walk this list, so an address added here without a row there fails."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, path

from arena.server.standings.ladder import BOT_PAGES
from arena.server.views import accounts, api, common, games, scrimmages, student, teacher

handler400 = common.bad_request
handler403 = common.refused
handler404 = common.not_found
handler500 = common.server_error

urlpatterns: list[URLPattern | URLResolver] = [
    path("", common.home, name="home"),
    path("signin", accounts.signin, name="signin"),
    path("signout", accounts.signout, name="signout"),
    path("join", accounts.join, name="join"),
    path("join/<str:code>", accounts.join, name="join_code"),
    path("setup/<str:token>", accounts.setup, name="setup"),
    path("me", student.me, name="me"),
    path("me/upload", student.upload, name="upload"),
    path("me/choose", student.choose, name="choose"),
    path("me/token", student.token, name="token"),
    path("versions/<int:number>", student.version, name="version"),
    path("versions/<int:number>/source", student.source, name="source"),
    path("me/scrimmages", scrimmages.ask, name="scrimmage_ask"),
    path("scrimmages/<int:ident>", scrimmages.show, name="scrimmage"),
    path("scrimmages/<int:ident>/games/<int:game_id>", scrimmages.game, name="scrimmage_game"),
    path("practice/<str:slug>/<int:number>", student.practice_game, name="practice_game"),
    path("ladder", games.board, name="ladder"),
    path("ladder.json", games.board_json, name="ladder_json"),
    path("games/<int:game_id>", games.game, name="game"),
    path("games/<int:game_id>/analyse", games.analyse, name="game_analyse"),
    path(f"{BOT_PAGES['ladder']}<str:name>", games.bot, name="ladder_bot"),
    path("final", games.board, {"which": "final"}, name="final"),
    path("final.json", games.board_json, {"which": "final"}, name="final_json"),
    path("final/games/<int:game_id>", games.game, {"which": "final"}, name="final_game"),
    path("final/games/<int:game_id>/analyse", games.analyse, {"which": "final"}, name="final_game_analyse"),
    path(f"{BOT_PAGES['final']}<str:name>", games.bot, {"which": "final"}, name="final_bot"),
    path("final/references/games/<int:game_id>", student.reference_game, name="reference_game"),
    path("teacher", teacher.dashboard, name="teacher"),
    path("teacher/settings", teacher.class_settings, name="class_settings"),
    path("teacher/freeze", teacher.freeze, name="freeze"),
    path("teacher/references", teacher.references, name="references"),
    path("teacher/members/<int:ident>/<str:action>", teacher.member_action, name="member_action"),
    path("teacher/gradebook.csv", teacher.gradebook_csv, name="gradebook"),
    path("api/submit", api.submit, name="api_submit"),
    path("api/versions/<int:ident>", api.version, name="api_version"),
    path("admin/", admin.site.urls),
]
