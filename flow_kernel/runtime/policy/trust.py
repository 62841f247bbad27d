"""The trust model (docs/security.md, "The trust model"): capabilities come from the person,
never from the content.

Content — a notebook's cells, a `.flow` file, a project `flow.toml` — may *ask* for a
capability; only the person grants it:

- at a prompt in a notebook (`Trust.grant`, once or remembered for that notebook),
- by explicit arguments (`flow run --allow-run git`, `Session(allow_run=["git"])`),
- by the environment variable `FLOW_ALLOW` for headless runs
  (`FLOW_ALLOW="run:git tools:shop_tools.py operator:auto-approve path:/data"`),
- by trusting a folder with `flow trust DIR`: content inside it gets what it asks for while
  the configuration that applies there is byte for byte the one that was trusted.

A `Capability` names one thing; `Trust` answers whether it was granted for one session
(one notebook, one `flow run`, one `Session`); `TrustStore` is the person's file of trusted
folders and remembered grants. Paths are compared resolved (symlinks followed, `..`
removed), so a link or a `..` that leads out of the folder counts as outside.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ALLOW_ENV = "FLOW_ALLOW"
KINDS = ("run", "tools", "operator", "path", "config")
# Operator policies that answer for the person and so need a grant; the others
# (interactive, auto-deny, none) never say yes on the person's behalf.
GRANTED_POLICIES = ("auto-approve", "answers:")
STORE_FILE = "trust.json"
STORE_VERSION = 1


def resolve_path(raw: str | Path, folder: Path) -> Path:
    """`raw` as an absolute path with symlinks and `..` resolved (relative to `folder`)."""
    return Path(os.path.realpath(Path(folder) / Path(raw)))


def is_inside(path: Path, folder: Path) -> bool:
    """Whether the resolved `path` is `folder` or below it (both already resolved)."""
    return path == folder or folder in path.parents


@dataclass(frozen=True)
class Capability:
    """One thing content can ask for. `target` is an executable name (`run`), an absolute
    resolved path (`tools`, `path`, `config`), or a policy (`operator`: "auto-approve" or
    "answers:<absolute path>")."""

    kind: str
    target: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown capability kind {self.kind!r} (known: {', '.join(KINDS)})")
        if not self.target:
            raise ValueError(f"a `{self.kind}` capability needs a target")

    @staticmethod
    def parse(text: str, folder: Path | str) -> Capability:
        """`kind:target` as written in `FLOW_ALLOW` (relative paths against `folder`)."""
        kind, sep, target = text.partition(":")
        if not sep or not target:
            raise ValueError(f"{ALLOW_ENV}: {text!r} is not `kind:target` (kinds: {', '.join(KINDS)}; "
                             "e.g. run:git, tools:tools.py, operator:auto-approve, path:/data, config:.)")
        return Capability.of(kind, target, Path(folder))

    @staticmethod
    def of(kind: str, target: str, folder: Path) -> Capability:
        """The capability with its target made canonical (paths resolved against `folder`)."""
        if kind in ("tools", "path", "config"):
            return Capability(kind, str(resolve_path(target, folder)))
        if kind == "operator":
            return operator_capability(target, folder) or Capability(kind, target)
        if kind == "run" and (not target.split() or "/" in target.split()[0]):
            raise ValueError(f"`run:{target}`: name an executable, not a path")
        return Capability(kind, target)

    def spec(self) -> str:
        """The `FLOW_ALLOW` word that grants this capability."""
        return f"{self.kind}:{self.target}"

    def describe(self) -> str:
        if self.kind == "run":
            return f"run the executable `{self.target}`"
        if self.kind == "tools":
            return f"run the Python tool file {self.target} on the host"
        if self.kind == "operator":
            if self.target == "auto-approve":
                return "approve every `approve` and tool approval on your behalf (operator auto-approve)"
            return (f"answer approvals and questions on your behalf from the file {self.target[len('answers:'):]} "
                    "(operator answers:)")
        if self.kind == "path":
            return f"use the path {self.target}, outside its folder"
        return (f"apply the configuration in {self.target} (flow.toml or [tool.flow]: providers' endpoints "
                "and key variables, the operator, allowed executables)")


def operator_capability(policy: str, folder: Path | str) -> Capability | None:
    """The capability an operator policy needs, or None for those that never answer yes
    for the person (interactive, auto-deny, none)."""
    if policy == "auto-approve":
        return Capability("operator", "auto-approve")
    if policy.startswith("answers:"):
        return Capability("operator", "answers:" + str(resolve_path(policy[len("answers:"):], Path(folder))))
    return None


class CapabilityDenied(Exception):
    """Content asked for a capability that nothing granted. The message says how to grant it."""

    def __init__(self, capability: Capability, *, asker: str = "This notebook or file",
                 purpose: str | None = None, folder: Path | None = None) -> None:
        self.capability = capability
        self.asker = asker
        self.purpose = purpose
        self.folder = folder
        what = capability.describe()
        if purpose:
            what += f" ({purpose})"
        super().__init__(f"{asker} asks to {what}; nothing granted it. To grant it: {self.how_to_grant()}")

    def how_to_grant(self) -> str:
        cap = self.capability
        ways = ["in a notebook, answer the prompt (Allow once / Allow for this notebook)"]
        flag = cli_flag(cap)
        if flag:
            ways.append(f"with `flow run`, add `{flag}`")
        ways.append(f"in a headless run (nbclient, nbval, CI), set {ALLOW_ENV}=\"{cap.spec()}\"")
        if self.folder is not None:
            ways.append(f"or trust the whole folder: `flow trust {self.folder}` (everything its content asks for)")
        else:
            ways.append("or trust the whole folder with `flow trust DIR` (everything its content asks for)")
        return "; ".join(ways) + "."


def cli_flag(cap: Capability) -> str | None:
    """The `flow run` flag that grants `cap`."""
    if cap.kind == "run":
        return f"--allow-run {cap.target}"
    if cap.kind == "tools":
        return None  # `flow run` loads no Python tool files
    if cap.kind == "operator":
        return f"--operator {cap.target}"
    if cap.kind == "path":
        return f"--allow-path {cap.target}"
    return f"--config {Path(cap.target) / 'flow.toml'}"


def parse_allow(text: str, folder: Path) -> set[Capability]:
    """The capabilities a `FLOW_ALLOW` value grants: words `kind:target` separated by
    spaces or commas, quoted as in a shell where a target has a space (a pinned `run`
    entry: `run:'git log *'`)."""
    import shlex

    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace += ","
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError as exc:
        raise ValueError(f"{ALLOW_ENV}: {exc}") from None
    return {Capability.parse(word, folder) for word in words}


# -- the person's store -------------------------------------------------------------------------

def config_home(environ: Mapping[str, str] | None = None) -> Path:
    """$FLOW_CONFIG_HOME, else $XDG_CONFIG_HOME/flow, else ~/.config/flow."""
    env = os.environ if environ is None else environ
    if env.get("FLOW_CONFIG_HOME"):
        return Path(env["FLOW_CONFIG_HOME"])
    if env.get("XDG_CONFIG_HOME"):
        return Path(env["XDG_CONFIG_HOME"]) / "flow"
    return Path.home() / ".config" / "flow"


def applied_config_file(folder: Path) -> tuple[Path, bytes] | None:
    """The configuration file that applies to content in `folder` (the nearest `flow.toml`,
    else the nearest `pyproject.toml` with `[tool.flow]`), with the bytes that say it — the
    whole `flow.toml`, or the `[tool.flow]` table of a `pyproject.toml` (so that bumping a
    version number elsewhere in it does not revoke trust)."""
    import tomllib

    for candidate in (folder, *folder.parents):
        flow_toml = candidate / "flow.toml"
        if flow_toml.is_file():
            return flow_toml, _read_bytes(flow_toml)
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            data = _read_bytes(pyproject)
            try:
                table = tomllib.loads(data.decode("utf-8")).get("tool", {}).get("flow")
            except (UnicodeDecodeError, tomllib.TOMLDecodeError):
                return pyproject, data  # unreadable: the bytes, so that any fix changes the hash
            if isinstance(table, dict):
                return pyproject, json.dumps(table, sort_keys=True, default=str).encode()
    return None


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        return f"<unreadable: {exc.strerror}>".encode()


def config_fingerprint(folder: Path) -> str:
    """What trusting `folder` vouches for: the path and content of the configuration that
    applies there (or that none does). Any edit, or a new nearer `flow.toml`, changes it."""
    found = applied_config_file(folder)
    digest = hashlib.sha256()
    if found is None:
        digest.update(b"no configuration")
    else:
        digest.update(str(found[0]).encode() + b"\0" + found[1])
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True)
class TrustEntry:
    folder: Path
    fingerprint: str
    config: Path | None  # the configuration file it trusted, None if none applied
    trusted_at: str

    def current(self) -> bool:
        """Whether the configuration still matches what was trusted."""
        return config_fingerprint(self.folder) == self.fingerprint


class TrustStore:
    """The person's trust file, `<config home>/trust.json`:

        {"version": 1,
         "folders": [{"path": "/abs/dir", "fingerprint": "sha256:…", "config": "/abs/dir/flow.toml",
                      "trusted_at": "2026-12-03T14:00:00Z"}],
         "documents": {"/abs/dir/nb.ipynb": ["run:git", "path:/data"]}}

    `folders` are `flow trust DIR`; `documents` are "Allow for this notebook" answers, keyed
    by the notebook's resolved path. Written atomically, readable by its owner only. An
    unreadable file counts as empty (nothing is trusted) and is never overwritten."""

    def __init__(self, path: Path | None = None, *, environ: Mapping[str, str] | None = None) -> None:
        self.path = Path(path) if path is not None else config_home(environ) / STORE_FILE

    # -- folders ----------------------------------------------------------------------------------
    def trust(self, folder: Path | str) -> TrustEntry:
        """Trust `folder` (and what is below it) with the configuration that applies there now."""
        resolved = resolve_path(folder, Path.cwd())
        if not resolved.is_dir():
            raise ValueError(f"{folder}: not a folder")
        found = applied_config_file(resolved)
        entry = TrustEntry(resolved, config_fingerprint(resolved), found[0] if found else None,
                           time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        with self._locked():
            data = self._load(for_write=True)
            folders = [f for f in data["folders"] if f.get("path") != str(resolved)]
            folders.append({"path": str(entry.folder), "fingerprint": entry.fingerprint,
                            "config": str(entry.config) if entry.config else None, "trusted_at": entry.trusted_at})
            data["folders"] = folders
            self._save(data)
        return entry

    def revoke(self, folder: Path | str) -> bool:
        """Forget `folder`; False when it was not trusted."""
        resolved = str(resolve_path(folder, Path.cwd()))
        with self._locked():
            data = self._load(for_write=True)
            kept = [f for f in data["folders"] if f.get("path") != resolved]
            if len(kept) == len(data["folders"]):
                return False
            data["folders"] = kept
            self._save(data)
        return True

    def entries(self) -> list[TrustEntry]:
        out = []
        for raw in self._load()["folders"]:
            if isinstance(raw, dict) and isinstance(raw.get("path"), str) and isinstance(raw.get("fingerprint"), str):
                config = raw.get("config")
                out.append(TrustEntry(Path(raw["path"]), raw["fingerprint"],
                                      Path(config) if isinstance(config, str) else None, str(raw.get("trusted_at", ""))))
        return out

    def trusting_entry(self, folder: Path | str) -> TrustEntry | None:
        """The entry that makes `folder` trusted: it is the entry's folder or below it, and
        the configuration that applies to `folder` is the one trusted, unchanged."""
        resolved = resolve_path(folder, Path.cwd())
        candidates = [e for e in self.entries() if is_inside(resolved, e.folder)]
        if not candidates:
            return None
        fingerprint = config_fingerprint(resolved)
        for entry in candidates:
            if entry.fingerprint == fingerprint and entry.current():
                return entry
        return None

    def is_trusted(self, folder: Path | str) -> bool:
        return self.trusting_entry(folder) is not None

    # -- remembered grants ("Allow for this notebook") --------------------------------------------
    def remembered(self, document: Path | str) -> set[Capability]:
        words = self._load()["documents"].get(str(resolve_path(document, Path.cwd())), [])
        out = set()
        for word in words if isinstance(words, list) else []:
            kind, _, target = str(word).partition(":")
            with contextlib.suppress(ValueError):
                out.add(Capability(kind, target))
        return out

    def documents(self) -> dict[str, list[str]]:
        """Every notebook with remembered grants: its path -> the `FLOW_ALLOW` words."""
        return {str(k): [str(w) for w in v] for k, v in self._load()["documents"].items() if isinstance(v, list)}

    def remember(self, document: Path | str, cap: Capability) -> None:
        key = str(resolve_path(document, Path.cwd()))
        with self._locked():
            data = self._load(for_write=True)
            words = set(data["documents"].get(key, []))
            words.add(cap.spec())
            data["documents"][key] = sorted(words)
            self._save(data)

    def forget(self, document: Path | str) -> bool:
        """Drop every remembered grant of `document`; False when there were none."""
        key = str(resolve_path(document, Path.cwd()))
        with self._locked():
            data = self._load(for_write=True)
            if data["documents"].pop(key, None) is None:
                return False
            self._save(data)
        return True

    # -- file ---------------------------------------------------------------------------------------
    def _load(self, *, for_write: bool = False) -> dict[str, Any]:
        empty: dict[str, Any] = {"version": STORE_VERSION, "folders": [], "documents": {}}
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return empty
        except OSError as exc:
            if for_write:
                raise ValueError(f"cannot read the trust store {self.path}: {exc.strerror}") from None
            return empty
        try:
            data = json.loads(text)
            if not (isinstance(data, dict) and isinstance(data.get("folders", []), list)
                    and isinstance(data.get("documents", {}), dict)):
                raise ValueError("not a trust store")
        except ValueError:
            if for_write:
                raise ValueError(f"the trust store {self.path} is not valid; fix or delete it") from None
            return empty
        data.setdefault("folders", [])
        data.setdefault("documents", {})
        return data

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time (a kernel and `flow trust` may write at once): an advisory
        lock on a file beside the store around each read-modify-write."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: last writer wins
            yield
            return
        with open(self.path.parent / ".trust.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".trust-", suffix=".json", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, sort_keys=True)
                handle.write("\n")
            os.replace(tmp, self.path)  # mkstemp made it 0600
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


# -- one session's grants -------------------------------------------------------------------------

class Trust:
    """What the person granted for one session (one notebook, one `flow run`, one Session).

    `folder` is the notebook's or file's folder: paths inside it need no grant. `document`
    (the notebook or file) is the key of "Allow for this notebook" grants in the store.
    `environ` is read once for `FLOW_ALLOW` (default: the process's environment)."""

    folder: Path
    grants: set[Capability]
    store: TrustStore
    document: Path | None
    asker: str

    def __init__(self, folder: Path | str, *, grants: Iterable[Capability] = (), store: TrustStore | None = None,
                 environ: Mapping[str, str] | None = None, document: Path | str | None = None,
                 asker: str = "This notebook or file") -> None:
        env = os.environ if environ is None else environ
        self.folder = resolve_path(folder, Path.cwd())
        self.store = store if store is not None else TrustStore(environ=env)
        self.document = resolve_path(document, Path.cwd()) if document is not None else None
        self.asker = asker
        self.grants = set(grants) | parse_allow(env.get(ALLOW_ENV, ""), self.folder)

    def granted(self, cap: Capability) -> bool:
        if cap in self.grants or self._covered(cap, self.grants):
            return True
        remembered = self.store.remembered(self._remembered_under())
        if cap in remembered or self._covered(cap, remembered):
            return True
        return self.folder_trusted()

    def _remembered_under(self) -> Path:
        """Where "Allow for this notebook" grants are kept: the notebook, or the folder when
        the session does not know its notebook (written and read under the same key)."""
        return self.document if self.document is not None else self.folder

    def executables(self) -> set[str]:
        """The executables granted to this session (arguments, `FLOW_ALLOW`, prompts)."""
        return {cap.target for cap in self.grants if cap.kind == "run"}

    @staticmethod
    def _covered(cap: Capability, grants: Iterable[Capability]) -> bool:
        """A granted `path` folder covers every path below it; an executable granted with
        any arguments covers its pinned entries (`run:git` covers `run:git status`)."""
        if cap.kind == "run":
            exe = cap.target.split()[0] if cap.target.split() else cap.target
            return Capability("run", exe) in grants
        if cap.kind != "path":
            return False
        target = Path(cap.target)
        return any(g.kind == "path" and is_inside(target, Path(g.target)) for g in grants)

    def require(self, cap: Capability, *, purpose: str | None = None) -> None:
        if not self.granted(cap):
            raise CapabilityDenied(cap, asker=self.asker, purpose=purpose, folder=self.folder)

    def grant(self, cap: Capability, *, remember: bool = False) -> None:
        """Grant `cap` for this session; with `remember`, also for later sessions of this
        notebook (kept in the store under `document`, or the folder when there is none)."""
        self.grants.add(cap)
        if remember:
            self.store.remember(self._remembered_under(), cap)

    def path(self, raw: str | Path, *, purpose: str) -> Path:
        """`raw` resolved against the folder; one outside it needs a `path` grant."""
        resolved = resolve_path(raw, self.folder)
        if not is_inside(resolved, self.folder):
            self.require(Capability("path", str(resolved)), purpose=purpose)
        return resolved

    def use_guard(self) -> Callable[[str], str | None]:
        """For `FileSystemLoader(guard=...)`: None for a file `use` may read, else why not."""

        def guard(name: str) -> str | None:
            try:
                self.path(name, purpose="`use` of a Flow file")
            except CapabilityDenied as denied:
                return str(denied)
            return None

        return guard

    def folder_trusted(self) -> bool:
        return self.store.is_trusted(self.folder)

    def operator(self, policy: str, *, purpose: str | None = None) -> str:
        """Require the grant an operator policy needs; returns the policy with an
        `answers:` path made absolute (so it reads the file that was granted)."""
        cap = operator_capability(policy, self.folder)
        if cap is not None:
            self.require(cap, purpose=purpose)
            return cap.target
        return policy


__all__ = [
    "ALLOW_ENV", "Capability", "CapabilityDenied", "Trust", "TrustEntry", "TrustStore", "cli_flag", "config_fingerprint",
    "config_home", "operator_capability", "parse_allow", "resolve_path",
]
