"""Confining a bot process: least privilege, resource limits, a sandbox, and finding all its processes.

Each layer is used where the machine offers it, and what is missing is said, so nobody is misled:
- rlimits, always: RLIMIT_DATA caps each process's writable memory (unlike an address-space limit it leaves
  the JVM's huge reservations alone), RLIMIT_NPROC bounds processes for a bot with a uid of its own (not
  for an ordinary user's bots: it would count every process of that user), no core dumps.
- a clean environment, always: a fixed PATH, HOME and TMPDIR, a locale, the runtimes' own memory flags set
  from the limit (JAVA_TOOL_OPTIONS, NODE_OPTIONS: a JVM otherwise sizes its heap from the host's memory),
  ARENA_MEMORY_MB, and the few ARENA_* knobs protocol.md names (`PASSED_ON`); nothing else of arena's
  environment (tokens, credentials, arena's own ARENA_* settings).
- a cgroup per bot process (v2, or v1's memory, pids and freezer hierarchies), where arena may make them:
  an exact memory limit for all of the bot's processes together, an exact process bound, a freezer that
  pauses every process of the bot at once (daemons that left its session included, and processes started
  while it is frozen), and a list of all of them, so that all of them can be ended.
- bubblewrap (`bwrap`), where installed and working: the bot's filesystem is an allowlist (the system's
  program and library folders, arena's Python, its own file or folder, the read-only paths the teacher
  grants with --read-only, a private size-bounded /tmp and /dev/shm, a minimal /dev, its own /proc; all
  else read-only, its root too), no network, its own PID namespace; where no cgroup counts its memory,
  seccomp refuses it shared memory outside those two sized tmpfs (arena/sandbox/seccomp.py). A bot's
  bot.toml `paths` only asks: a bot is entered only if the teacher granted them.
- no privilege: started by root, a bot runs as an unprivileged user id of its own (bubblewrap sets up the
  sandbox as root, then `setpriv` drops every capability, sets no-new-privileges and changes to that uid
  before the bot's program runs); started by an ordinary user, it is that user with no capabilities.

The package's modules, one idea each, the value types at the bottom: `values` (Confinement, Capabilities),
`environment` (a bot's environment and the folders bound in), `grants` (the teacher's --read-only),
`command` (the bubblewrap command), `probe` (whether bubblewrap runs here), `cgroups` (the v1/v2 driver),
`jail` (Jail and Warden) and `detect` (what this machine can enforce). This facade names what the rest of
arena uses.
"""

from arena.sandbox.cgroups import CPU_WEIGHT, Cgroups, _own_cgroups
from arena.sandbox.detect import capabilities
from arena.sandbox.environment import PASSED_ON, _arena_paths, environment
from arena.sandbox.grants import GrantError, grant, ungranted
from arena.sandbox.jail import Jail, Warden
from arena.sandbox.probe import sandbox_problem
from arena.sandbox.values import DEFAULT_MEMORY_MB, UID_BASE, Capabilities, Confinement, MiB

__all__ = [
    "CPU_WEIGHT",
    "DEFAULT_MEMORY_MB",
    "PASSED_ON",
    "UID_BASE",
    "Capabilities",
    "Cgroups",
    "Confinement",
    "GrantError",
    "Jail",
    "MiB",
    "Warden",
    "_arena_paths",
    "_own_cgroups",
    "capabilities",
    "environment",
    "grant",
    "sandbox_problem",
    "ungranted",
]
