"""KGP's grammar (arena/match/kgp.py) against the spec's own examples (KWARC kalah-game, spec/012 and 021),
the lines the course's server and client libraries write, and a fuzzer: any text is a command or a KgpError,
never another exception, and every command arena writes reads back as itself."""

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.game.rules import NORTH, SOUTH, parse_rules
from arena.kgp.grammar import LINE_LIMIT, Board, Command, KgpError, parse
from arena.kgp.wire import CONNECTED, Kgp
from arena.match.process import Fault

# The freeplay example of spec/021, both parties' lines: (line, id, ref, name, args).
FREEPLAY = [
    ("kgp 1 0 0", None, None, "kgp", (1, 0, 0)),
    ("mode freeplay", None, None, "mode", ("freeplay",)),
    ("2 init", 2, None, "init", ()),
    ("4 state <3,0,0,3,3,3,3,3,3>", 4, None, "state", (Board((3, 3, 3), (3, 3, 3)),)),
    ("@4 move 1", None, 4, "move", (1,)),
    ("6@4 stop", 6, 4, "stop", ()),
    ("8 state <3,1,3,0,4,4,4,3,3>", 8, None, "state", (Board((0, 4, 4), (4, 3, 3), 1, 3),)),
    ("@8 move 3", None, 8, "move", (3,)),
    ("@8 yield", None, 8, "yield", ()),
    ("10@8 stop", 10, 8, "stop", ()),
    ('error "Unsupported activity"', None, None, "error", ("Unsupported activity",)),
    ("goodbye", None, None, "goodbye", ()),
]


@pytest.mark.parametrize(("line", "ident", "ref", "name", "args"), FREEPLAY)
def test_the_specs_freeplay_example_parses(line, ident, ref, name, args):
    command = parse(line + "\r\n")
    assert command == Command(name, args, ident, ref)
    assert command.line() == line  # and arena writes it back as the spec does


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("32", 32),
        ("+0", 0),
        ("-100", -100),
        ("0.0", 0.0),
        ("+3.141", 3.141),
        ("-.123", -0.123),
        ("single-word", "single-word"),
        ('"with double quotes"', "with double quotes"),
        (r'"like \" this"', 'like " this'),
        ("info:name", "info:name"),
        (r'"back\\slash"', "back\\slash"),
        (r'"two\nlines"', "two\nlines"),  # as the course server reads \n and \t
    ],
)
def test_the_specs_argument_examples_have_their_types(text, value):
    (arg,) = parse(f"set x {text}").args[1:]
    assert arg == value
    assert type(arg) is type(value)


def test_the_specs_board_example_reads_south_first():
    """spec/012: <3,10,2,1,2,3,4,2,0> is size 3, South's store 10, North's 2, South's pits 1 2 3 and
    North's 4 2 0."""
    (board,) = parse("state <3,10,2,1,2,3,4,2,0>").args
    assert board == Board((1, 2, 3), (4, 2, 0), 10, 2)
    assert str(board) == "<3,10,2,1,2,3,4,2,0>"


def test_an_agent_is_sent_its_own_row_as_south():
    rules = parse_rules("kalah,pits=3,seeds=2")
    pos = rules.play(rules.play(rules.initial(), 2), 3)  # South: pit 2 (extra turn), pit 3; North to move
    assert pos.board == (2, 0, 0, 2, 3, 3, 2, 0)
    assert str(Board.seen_by(pos, SOUTH)) == "<3,2,0,2,0,0,3,3,2>"
    assert str(Board.seen_by(pos, NORTH)) == "<3,0,2,3,3,2,2,0,0>"


def test_what_the_course_software_writes_parses():
    """Lines as the Go server (ids even, Go-quoted strings) and the Python library (ids odd) write them."""
    assert parse("2 kgp 1 0 1") == Command("kgp", (1, 0, 1), 2)
    assert parse('12@7 error "Duplicate \\"mode\\" request"').args == ('Duplicate "mode" request',)
    assert parse('1 set info:name "my agent"') == Command("set", ("info:name", "my agent"), 1)
    assert parse("5@4 move 3") == Command("move", (3,), 5, 4)
    assert parse("  7@4   move\t3  ") == Command("move", (3,), 7, 4)
    assert parse("3 set auth:token abc-123") == Command("set", ("auth:token", "abc-123"), 3)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("", "not a KGP command"),
        ("@ move 1", "not a KGP command"),
        ("move_it 1", "not a KGP command"),
        ("move 1.2.3", "not an integer"),
        ('set info:name "open', "closing quote"),
        ('set info:name "a"b', "no space after"),
        ("state <3,0,0,3,3>", "a board of size 3 has 9 numbers"),
        ("state <0,0,0>", "a board of size 0"),
        ("state <3,0,0,a>", "not a board literal"),
        ("x" * (LINE_LIMIT + 1), f"longer than {LINE_LIMIT}"),
        ("move " + "9" * 5000, "more than 18 digits"),  # Python reads no int of 4300 digits and more
        ("9" * 19 + " move 1", "more than 18 digits"),
        ("state <3," + "1" * 19 + ",0,3,3,3,3,3,3>", "more than 18 digits"),
    ],
)
def test_broken_lines_say_what_is_wrong_in_one_line(line, words):
    with pytest.raises(KgpError) as info:
        parse(line)
    assert words in str(info.value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 120


def test_a_line_at_the_limit_is_read():
    line = "set x " + "y" * (LINE_LIMIT - 8)
    assert len(line + "\r\n") == LINE_LIMIT
    assert parse(line + "\r\n").args[1] == "y" * (LINE_LIMIT - 8)


def test_arena_quotes_a_string_that_would_read_as_another_type():
    for value in ("12", "-5", "", "two words", 'a"b', "tab\there", "<1,0,0,1,1>", "~"):
        line = Command("set", ("info:comment", value)).line()
        assert parse(line).args[1] == value
    assert Command("set", ("info:name", "bare-word")).line() == "set info:name bare-word"
    for bad in ("bell\a", "caf\u00e9", "\x7f"):  # arena writes printable ASCII only
        with pytest.raises(ValueError):
            Command("set", ("x", bad)).line()


def test_arena_will_not_write_a_line_over_the_limit():
    with pytest.raises(ValueError, match="over the limit"):
        Command("set", ("x", "y" * LINE_LIMIT)).line()


@settings(deadline=None)  # a loaded machine's pauses are not the grammar's
@given(st.text(max_size=200))
def test_any_text_is_a_command_or_a_kgp_error(text):
    try:
        command = parse(text)
    except KgpError as e:
        assert "\n" not in str(e)
    else:
        assert command.name.isalnum()


_words = st.from_regex(r"[A-Za-z0-9:-]{1,12}", fullmatch=True)
_strings = st.text(
    st.characters(min_codepoint=32, max_codepoint=126) | st.sampled_from("\n\t\r"), max_size=30
)
_boards = st.integers(1, 8).flatmap(
    lambda n: st.builds(
        Board,
        st.lists(st.integers(0, 99), min_size=n, max_size=n).map(tuple),
        st.lists(st.integers(0, 99), min_size=n, max_size=n).map(tuple),
        st.integers(0, 99),
        st.integers(0, 99),
    )
)
_args = (
    st.integers(-(10**12), 10**12)
    | _words
    | _strings
    | _boards
    | st.floats(-1e6, 1e6).map(lambda x: round(x, 3))
)


@settings(deadline=None)
@given(
    st.from_regex(r"[a-z][A-Za-z0-9]{0,9}", fullmatch=True),  # a name of digits alone would read as an id
    st.lists(_args, max_size=5).map(tuple),
    st.none() | st.integers(0, 10**9),
    st.none() | st.integers(0, 10**9),
)
def test_every_command_arena_writes_reads_back_as_itself(name, args, ident, ref):
    command = Command(name, args, ident, ref)
    assert parse(command.line() + "\r\n") == command


# --- the wire, fuzzed: whatever an agent writes, the referee answers in KGP and decides (a move or a Fault)


class _Agent:
    """A process whose agent has written `lines` (then nothing more): what the Kgp wire reads and sends."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(lines)
        self.sent: list[str] = []

    def send(self, line: str, deadline: float) -> None:
        line.encode("ascii")  # as BotProcess.send writes it
        self.sent.append(line)

    def read_line(self, until, on_slow=None, slow_after=0.005, keep_cr=False, limit=0):  # type: ignore[no-untyped-def]
        return self.lines.pop(0) if self.lines else None

    def stderr_tail(self, since: int = 0) -> str:
        return CONNECTED


_lines = st.lists(
    st.text(max_size=40)
    | st.sampled_from(
        [
            "mode freeplay",
            "3 mode freeplay",
            "@2 move 1",
            "move 2",
            "@2 move 9",
            "1 ping",
            "yield",
            "@2 yield",
        ]
        + [
            'set info:name "x"',
            "set info:comment 7",
            "goodbye",
            "ok",
            'error "e"',
            "@4 move 3",
            "mode simple",
            "@4 bad!",
            "7@ x",
            "5 ping \ufffd",
            "ping <1,0,0,1,1>",
            "bad\ufffd!",
            'move "3"',
            "@2 move -1",
        ]
    ),
    max_size=12,
)


@settings(deadline=None)  # a loaded machine's pauses are not the wire's
@given(_lines)
def test_whatever_an_agent_writes_the_wire_answers_in_kgp_and_decides(lines):
    rules = parse_rules("kalah,pits=3,seeds=2")
    agent = _Agent(lines)
    wire = Kgp(agent)  # type: ignore[arg-type]
    wire.new_game(rules, SOUTH, 0.0)
    pos = rules.initial()
    try:
        move = wire.move(pos, SOUTH, 100, time.monotonic() + 5, None, time.monotonic() + 1)
    except Fault as fault:
        assert fault.reason in ("timeout", "garbled", "crash")
        assert "\n" not in fault.detail
    else:
        assert isinstance(move, int)  # legal, or the last illegal one for the referee to judge
    for line in agent.sent:
        assert line.endswith("\r")
        parse(line)  # arena writes only KGP


@pytest.mark.parametrize(
    ("lines", "version"),
    [
        (['set info:name "deep"', 'set info:authors "ann,bob"', "mode freeplay"], "deep / ann,bob"),
        (['set info:name "deep"', "set info:version 2.1", "mode freeplay"], "2.1"),
    ],
)
def test_an_agent_states_its_version_by_info_version_or_its_name_and_authors(lines, version):
    """What a ranked agent's version is (a new one is a new rating): `set info:version`, else its name and
    authors, as the course server knows an agent by them."""
    wire = Kgp(_Agent(lines))  # type: ignore[arg-type]
    wire.greet(time.monotonic() + 5)
    assert wire.version == version


class _Ponging(_Agent):
    """An agent that answers each `ping` arena sends with `pong` (its next line), unless `mute`, and a
    command of arena's whose id is a key of `replies` with those lines."""

    def __init__(self, lines: list[str], replies: dict[int, list[str]] | None = None, mute: bool = False):
        super().__init__(lines)
        self.replies, self.mute = replies or {}, mute

    def send(self, line: str, deadline: float) -> None:
        super().send(line, deadline)
        ident = line.split()[0]
        if line.endswith(" ping\r") and not self.mute:
            self.lines.insert(0, f"@{ident} pong")
        self.lines += self.replies.pop(int(ident) if ident.isdigit() else -1, [])


def _names(sent: list[str]) -> list[str]:
    return [parse(line).name for line in sent]


def test_a_state_whose_time_ran_out_gets_ping_and_its_stop_once_the_pong_came_as_go_kgp_sends_them():
    """go-kgp (proto/client.go, Request): at the timeout `ping`, and the state's `stop` (deferred) once the
    `pong` came. The course's Python library sends its `pong` through the queue its search writes to, so a
    search still writing has let go of it by then. Without a `pong` the move stands, and the `stop` waits
    for it before the next `state`, on that state's clock (then it is sent anyway)."""
    rules = parse_rules("kalah,pits=3,seeds=2")
    pos = rules.initial()
    agent = _Ponging(["mode freeplay", "@4 move 2"])
    wire = Kgp(agent)  # type: ignore[arg-type]
    wire.new_game(rules, SOUTH, 0.0)
    soon = time.monotonic() + 0.1
    assert wire.move(pos, SOUTH, 100, soon, None, soon) == 2
    assert _names(agent.sent) == ["kgp", "ok", "state", "ping", "stop"] and agent.sent[-1] == "8@4 stop\r"
    mute = _Ponging(["mode freeplay", "@4 move 2"], {10: ["@10 move 1"]}, mute=True)
    wire = Kgp(mute)  # type: ignore[arg-type]
    wire.new_game(rules, SOUTH, 0.0)
    assert wire.move(pos, SOUTH, 100, soon, None, soon) == 2
    assert _names(mute.sent)[-2:] == ["state", "ping"]
    soon = time.monotonic() + 0.1
    assert wire.move(pos, SOUTH, 100, soon, None, soon) == 1
    assert mute.sent[-3:] == ["8@4 stop\r", "10 state <3,0,0,2,2,2,2,2,2>\r", "12@10 stop\r"]


def test_a_yielded_states_stop_comes_once_the_agent_answered_a_ping_and_without_one_if_it_does_not():
    """go-kgp sends it at once; arena after the `pong` to a `ping` sent with the yield (the library's search
    may still hold its queue's lock then), waited for on the agent's own clock. An agent that does not
    answer by its next `state` gets its `stop` then, and its later ones at once, until it answers."""
    rules = parse_rules("kalah,pits=3,seeds=2")
    pos, state = rules.initial(), "10 state <3,0,0,2,2,2,2,2,2>\r"
    for mute, later in (
        (False, [state, "12 ping\r", "14@10 stop\r"]),
        (True, ["8@4 stop\r", state, "12@10 stop\r"]),
    ):
        replies = {10: ["@10 move 1", "@10 yield"], 14: ["@6 pong", "@14 move 3", "@14 yield"]}
        sent = _Ponging(["mode freeplay", "@4 move 2", "@4 yield"], replies, mute)
        wire = Kgp(sent)  # type: ignore[arg-type]
        wire.new_game(rules, SOUTH, 0.0)
        assert wire.move(pos, SOUTH, 100, time.monotonic() + 5, None, time.monotonic() + 1) == 2
        assert _names(sent.sent) == ["kgp", "ok", "state", "ping", "stop"][: 4 if mute else 5]
        assert wire.move(pos, SOUTH, 100, time.monotonic() + 5, None, time.monotonic() + 1) == 1
        assert sent.sent[-3:] == later
    # The mute one answers the ping it missed (6) late, by its next state: its stops wait for a pong again.
    assert wire.move(pos, SOUTH, 100, time.monotonic() + 5, None, time.monotonic() + 1) == 3
    assert sent.sent[-2:] == ["14 state <3,0,0,2,2,2,2,2,2>\r", "16 ping\r"]
