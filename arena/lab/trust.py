"""Who may take part in a class's cluster: the holders of a certificate signed by the class's own authority.

A lab network is not a trusted one: whoever reaches a plain tcp:// scheduler joins as a worker and is sent
bots and games. So the cluster speaks TLS with mutual authentication (Dask's `Security`: both ends of every
connection show a certificate signed by the class's authority, and check the other's). `make` writes that
authority and one key and certificate per role: the scheduler's, the workers' (one for every lab machine)
and the coordinator's (the machine that runs `arena run`). The authority's key (ca.key) signs them and
stays with the teacher; no machine of the cluster needs it, so it is written apart (`authority`: the
folder beside the certificates' folder, FOLDER.authority), never into the folder the coordinator reads,
which refuses a folder that holds it.

Each certificate names its role (an OU of its subject: scheduler, worker, coordinator) and a machine's own
worker certificate (`make_machine`, `arena cluster-certs DIR --machine NAME`) names its machine too (an OU
'machine NAME'), so that a peer cannot take a role it was not given (arena/lab/guard.py enforces it
in the lab's processes) and one machine's certificate can be revoked (REVOKED, a list the scheduler reads).
"""

from __future__ import annotations

import datetime
import os
import urllib.parse
from pathlib import Path
from typing import Any

ROLES = ("scheduler", "worker", "coordinator")
MACHINE_UNIT = "machine "  # the OU that names a worker certificate's machine: 'machine lab-3'
REVOKED = "revoked"  # beside the scheduler's ca.pem: machine names or certificate serials, one a line
# The key of a registered worker's Dask `extra` (which the scheduler's worker info shows) where the guard
# writes the machine the worker is, in words no worker can choose: 'certified NAME' (its certificate's),
# else 'from IP' (where the scheduler saw it connect from, for the class's shared certificate)
MACHINE_EXTRA = "arena-machine"
CERTS_ENV = "ARENA_CLUSTER_CERTS"
GUARD_OP = "arena_guard"  # what the coordinator asks a scheduler: whether it runs arena's guard (guard.py)
GUARDED = "arena.lab.guard"  # a guarded scheduler's answer
# Set (to anything), `arena run --cluster` plays on a scheduler without the guard: one only trusted machines
# reach, or a test's LocalCluster (docs/lab.md)
UNGUARDED_ENV = "ARENA_UNGUARDED_SCHEDULER"
YEARS = 5  # a class's certificates outlive a course; a new class makes its own authority


class TrustError(ValueError):
    """Certificates or an address that cannot be used as asked; the message is one line saying what to do."""


def authority(folder: Path) -> Path:
    """Where the authority's key of the certificates in `folder` is kept: FOLDER.authority beside it."""
    folder = folder.absolute()
    return folder.parent / f"{folder.name}.authority"


def make(folder: Path, name: str = "arena class") -> list[Path]:
    """Write the class's authority (ca.pem into `folder`, its key ca.key into `authority(folder)`) and
    ROLE.pem/ROLE.key for every role into `folder`. Keys are readable by their owner only. Refuses to
    overwrite an authority already there: certificates handed out under it would stop working."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    for there in (folder / "ca.pem", authority(folder) / "ca.key"):
        if there.exists():
            raise TrustError(
                f"{there} exists: the certificates handed out under it would stop working; "
                "give another folder, or delete that one first"
            )
    folder.mkdir(parents=True, exist_ok=True)
    authority(folder).mkdir(mode=0o700, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    until = now + datetime.timedelta(days=365 * YEARS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} certificate authority")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    written = [folder / "ca.pem", _key_file(authority(folder) / "ca.key", ca_key)]
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for role in ROLES:
        written += _issue(folder, role, f"{name} {role}", (role,), ca_key, ca_name, until)
    return written


def make_machine(folder: Path, machine: str) -> list[Path]:
    """Write worker-MACHINE.pem/.key into `folder`: a worker certificate of that machine alone, signed by
    the authority of its ca.pem (its key in `authority(folder)`, as `make` wrote it, or, as an older arena
    wrote it, in `folder`), revocable by its name in REVOKED."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    if not machine or not all(c.isalnum() or c in "-_." for c in machine) or machine.startswith("."):
        raise TrustError(f"{machine!r} is not a machine name: use letters, digits, '-', '_' and '.'")
    try:
        ca = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
        key = authority(folder) / "ca.key"
        key = key if key.exists() else folder / "ca.key"
        ca_key = serialization.load_pem_private_key(key.read_bytes(), password=None)
    except (OSError, ValueError) as e:
        raise TrustError(
            f"cannot sign a machine's certificate with the authority in {folder} ({e}): make it first with "
            "'arena cluster-certs DIR', then give that DIR"
        ) from None
    if (folder / f"worker-{machine}.pem").exists():
        raise TrustError(
            f"{folder / f'worker-{machine}.pem'} exists: revoke it, or give the machine another name"
        )
    name = ca.subject.rfc4514_string().removeprefix("CN=").removesuffix(" certificate authority")
    units = ("worker", f"{MACHINE_UNIT}{machine}")
    return _issue(
        folder,
        f"worker-{machine}",
        f"{name} worker {machine}",
        units,
        ca_key,
        ca.subject,
        ca.not_valid_after_utc,
    )


def _issue(
    folder: Path, file: str, common: str, units: tuple[str, ...], ca_key: Any, ca_name: Any, until: Any
) -> list[Path]:
    """FILE.pem and FILE.key in `folder`: a certificate of `common`, its `units` (its role, and its
    machine) as OUs of its subject, signed by the authority."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    subject += [x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit) for unit in units]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        # Every role both listens and connects (a worker serves the scheduler and other workers).
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    (folder / f"{file}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return [folder / f"{file}.pem", _key_file(folder / f"{file}.key", key)]


def _key_file(path: Path, key: Any) -> Path:
    from cryptography.hazmat.primitives import serialization

    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def security(folder: Path | None) -> Any:
    """The coordinator's `distributed.Security`: from `folder` (ca.pem, coordinator.pem/.key, as `make`
    writes them), else from Dask's own configuration (DASK_DISTRIBUTED__COMM__TLS__CA_FILE,
    ..._TLS__CLIENT__CERT, ..._TLS__CLIENT__KEY, or a dask config file)."""
    from distributed import Security

    if folder is not None:
        files = {
            "ca": folder / "ca.pem",
            "cert": folder / "coordinator.pem",
            "key": folder / "coordinator.key",
        }
        if (folder / "ca.key").exists():
            raise TrustError(
                f"{folder / 'ca.key'} is in the folder this machine reads to join the cluster: the "
                f"authority's key signs any certificate; move it to {authority(folder)} (where 'arena "
                "cluster-certs' keeps it and finds it) or off this machine"
            )
        lacking = [str(p) for p in files.values() if not p.is_file()]
        if lacking:
            raise TrustError(
                f"the cluster certificates folder {folder} lacks {', '.join(lacking)}: make the class's "
                "certificates with 'arena cluster-certs DIR'"
            )
        return Security(
            tls_ca_file=str(files["ca"]),
            tls_client_cert=str(files["cert"]),
            tls_client_key=str(files["key"]),
            require_encryption=True,
        )
    found = Security(require_encryption=True)
    if not (getattr(found, "tls_ca_file", None) and getattr(found, "tls_client_cert", None)):
        raise TrustError(
            f"a tls:// cluster needs the class's certificates: give their folder with --cluster-certs DIR "
            f"(or ${CERTS_ENV}; 'arena cluster-certs DIR' makes them), or set Dask's "
            "DASK_DISTRIBUTED__COMM__TLS__CA_FILE, __CLIENT__CERT and __CLIENT__KEY"
        )
    return found


def check_address(address: str, insecure: bool) -> str:
    """The scheduler's address if it may be used: tls://, or tcp:// only when asked for (`insecure`)."""
    scheme = urllib.parse.urlsplit(address).scheme if "://" in address else "tcp"
    if scheme == "tls":
        return address
    if scheme == "tcp":
        if insecure:
            return address
        raise TrustError(
            f"{address} is a plain tcp:// cluster: whoever reaches its port can join as a worker, get the "
            "bots and forge results; start it with the class's certificates and give tls://HOST:8786 (see "
            "'arena cluster-certs'), or pass --insecure-cluster to play on it anyway"
        )
    raise TrustError(f"the cluster address {address} is neither tls://HOST:PORT nor tcp://HOST:PORT")
