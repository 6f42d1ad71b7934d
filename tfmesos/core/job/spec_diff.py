"""What an update of a running job (``tfmesos update``) changes, and what that restarts: a pure
diff of the spec the job runs and the spec it is given, field by field, each named by the option
that sets it (``$.roles.worker.count``), so that a refusal reads as ``OptionsError``'s do.

Three kinds of field:

- fixed while the framework lives (``FIXED``): its name, the Mesos role, principal and user it
  subscribed with, where its record and API are, where it saves. An update of one is refused,
  with the reason, before anything is stopped;
- what a task is launched with (counts, resources, commands, env, the image, ...): changing it
  relaunches the tasks it concerns at a planned stop, the whole job where the cluster changes
  (a count: every task's ClusterSpec) or where the framework cannot outlive one of them (a
  collective worker, a ps: ``FrameworkProfile.restarts_whole_job``);
- the job's policies (restart limits, timeouts, success): they apply from now on, nothing stops.

The same spec again changes nothing and restarts the whole job: a graceful whole-job restart.
Environment values are never shown, only the names whose value changed.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

from ..spec import JobSpec, Policies, RoleSpec, TaskKey
from ..task_key import TENSORBOARD

# ServiceSpec fields a live framework cannot change, with the option that sets each and why.
FIXED: dict[str, tuple[str, str]] = {
    "name": ("$.service.name", "the job is known by its name (its record, its API token, its framework): "
                               "a job under another name is a new job (tfmesos run)"),
    "mesos_role": ("$.service.role", "the framework subscribed with this Mesos role; its tasks hold "
                                     "resources of it: another role needs a new framework (tfmesos run)"),
    "principal": ("$.service.principal", "the framework authenticated as this principal: another needs a "
                                         "new framework (tfmesos run)"),
    "user": ("$.service.user", "the framework's user runs every task and its sandbox: another needs a new "
                               "framework (tfmesos run)"),
    "revocable": ("$.service.revocable", "the framework subscribed with or without the REVOCABLE_RESOURCES "
                                         "capability: another needs a new framework (tfmesos run)"),
    "failover_timeout": ("$.service.failover_timeout", "the master keeps the framework's tasks that long "
                                                       "after the scheduler goes: it was given at subscription"),
    "zk": ("$.service.zk", "the job's record is kept there: the scheduler reads and writes it"),
    "state_dir": ("$.service.state_dir", "the job's record is kept there: the scheduler reads and writes it"),
    "api_port": ("$.service.api_port", "the API taking this update listens there"),
    "api_token_reads": ("$.service.api_token_reads", "the API taking this update serves with it"),
}
_FIXED_JOB = {
    "checkpoint_dir": ("$.job.checkpoint_dir", "the tasks resume from the step saved there: another "
                                               "directory would start the training over"),
    "secrets": ("$.job.secret_env", "the scheduler reads secret values when it starts, not on an update: "
                                    "run the job again (tfmesos kill, then tfmesos run) to change them"),
}
# JobSpec fields every task is launched with: a change relaunches the whole job.
_LAUNCH = {"env": "$.job.env", "image": "$.job.image", "python": "$.job.python", "uris": "$.job.uris",
           "workdir": "$.job.workdir", "volumes": "$.job.volumes"}
# RoleSpec fields a task is launched with, and those that only decide what happens at its end.
_ROLE_LAUNCH = ("count", "resources", "command", "env")
_ROLE_POLICY = ("restart_policy", "max_restarts")


@dataclass(frozen=True)
class Change:
    field: str  # the option that sets it: $.roles.worker.count
    was: str
    now: str

    def __str__(self) -> str:
        return f"{self.field}: {self.was} -> {self.now}"


@dataclass(frozen=True)
class SpecDiff:
    """What the new spec changes (``changes``), what cannot change (``refused``: one problem per
    field, naming it, what it is and why), the tasks it adds and removes, and which tasks stop at
    a planned stop to be launched again (``restarts``; every task: ``whole_job``), with the peers
    the framework has save at the step and relaunch with them (``saving``: a parameter-server
    job's chief, which must learn the new addresses: profile.told_of_stop)."""

    changes: tuple[Change, ...]
    refused: tuple[str, ...]
    added: tuple[TaskKey, ...]
    removed: tuple[TaskKey, ...]
    restarts: tuple[TaskKey, ...]
    whole_job: bool
    saving: tuple[TaskKey, ...] = ()

    @property
    def same(self) -> bool:
        """Nothing changes: the update is a graceful whole-job restart."""
        return not self.changes

    def restart_text(self) -> str:
        """What the update restarts, in a person's words."""
        if self.whole_job:
            why = " (nothing changes: a graceful restart)" if self.same else ""
            return f"the whole job stops at a planned stop and resumes from its checkpoint{why}"
        if self.restarts:
            text = f"{', '.join(map(str, self.restarts))} stop at a planned stop and resume from the checkpoint"
            if self.saving:
                text += f"; {', '.join(map(str, self.saving))} {'saves' if len(self.saving) == 1 else 'save'} at " \
                        "the step and restarts with them"
            return text
        return "nothing stops: the policies apply from now on"

    def lines(self) -> list[str]:
        """The plan, one line each: every change, the tasks added and removed, what restarts."""
        out = [str(change) for change in self.changes] or ["no option changes"]
        if self.added:
            out.append(f"new tasks: {', '.join(map(str, self.added))}")
        if self.removed:
            out.append(f"tasks that go: {', '.join(map(str, self.removed))}")
        out.append(f"restarts: {self.restart_text()}")
        return out


def diff(old: JobSpec, new: JobSpec) -> SpecDiff:
    """What running ``new`` in place of ``old`` changes and restarts (``refused``: what it cannot)."""
    refused: list[str] = []
    changes: list[Change] = []
    for name, (path, why) in FIXED.items():
        was, now = getattr(old.service, name), getattr(new.service, name)
        if was != now:
            refused.append(f"{path}: {_shown(was)} cannot change to {_shown(now)} while the job runs: {why}")
    for name, (path, why) in _FIXED_JOB.items():
        was, now = getattr(old, name), getattr(new, name)
        if was != now:
            shown = "" if name == "secrets" else f" {_shown(was)} cannot change to {_shown(now)}"
            refused.append(f"{path}:{shown or ' cannot change'} while the job runs: {why}")
    whole = False
    for name, path in _LAUNCH.items():
        change = _change(path, getattr(old, name), getattr(new, name), env=name == "env")
        if change:
            changes.append(change)
            whole = True
    changes += _policy_changes(old.policies, new.policies)
    restarts: set[TaskKey] = set()
    for role in _role_names(old, new):
        was, now = old.role(role), new.role(role)
        changes += _role_changes(role, was, now)
        if was is not None and now is not None and all(getattr(was, n) == getattr(now, n) for n in _ROLE_LAUNCH):
            continue  # its policies alone, or nothing
        if (was is None or now is None or was.count != now.count) and role != TENSORBOARD:
            whole = True  # the cluster changes: every task's ClusterSpec with it
        restarts.update(TaskKey(role, i) for i in range(min(was.count if was else 0, now.count if now else 0)))
    old_keys, new_keys = old.task_keys(), set(new.task_keys())
    kept = [key for key in old_keys if key in new_keys]
    if any(old.profile.restarts_whole_job(old, key) for key in restarts):
        whole = True
    if not changes:  # the same options again: a graceful whole-job restart
        whole = True
    known = set(old_keys)
    restarting = tuple(kept) if whole else tuple(key for key in kept if key in restarts)
    return SpecDiff(
        changes=tuple(changes),
        refused=tuple(refused),
        added=tuple(key for key in new.task_keys() if key not in known),
        removed=tuple(key for key in old_keys if key not in new_keys),
        restarts=restarting,
        whole_job=whole,
        saving=() if whole or not restarting else tuple(
            key for key in old.profile.told_of_stop(old, list(restarting)) if key not in restarting and key in known),
    )


def _role_names(old: JobSpec, new: JobSpec) -> list[str]:
    names = [role.name for role in old.roles]
    return names + [role.name for role in new.roles if role.name not in names]


def _role_path(role: str, name: str) -> str:
    if role == TENSORBOARD:
        return "$.tensorboard" if name == "enabled" else f"$.tensorboard.{name}"
    return f"$.roles.{role}.{name}"


def _role_changes(role: str, was: RoleSpec | None, now: RoleSpec | None) -> list[Change]:
    if was is None or now is None:  # a role that comes or goes: its count (tensorboard: enabled)
        field = "enabled" if role == TENSORBOARD else "count"
        before, after = (0, now.count) if was is None else (was.count, 0)  # type: ignore[union-attr]
        if role == TENSORBOARD:
            before, after = bool(before), bool(after)
        return [Change(_role_path(role, field), _shown(before), _shown(after))]
    out: list[Change] = []
    for name in _ROLE_LAUNCH + _ROLE_POLICY:
        if name == "resources":
            out += _resource_changes(role, was.resources, now.resources)
            continue
        change = _change(_role_path(role, name), getattr(was, name), getattr(now, name), env=name == "env")
        if change:
            out.append(change)
    return out


def _resource_changes(role: str, was: Any, now: Any) -> list[Change]:
    names = list(was) + [name for name in now if name not in was]
    return [Change(_role_path(role, name) if name in ("cpus", "mem", "disk", "gpus") else
                   f"{_role_path(role, 'resources')}[{name}]", _shown(was.get(name)), _shown(now.get(name)))
            for name in names if was.get(name) != now.get(name)]


def _policy_changes(was: Policies, now: Policies) -> list[Change]:
    return [Change(f"$.policies.{f.name}", _shown(getattr(was, f.name)), _shown(getattr(now, f.name)))
            for f in fields(Policies) if getattr(was, f.name) != getattr(now, f.name)]


def _change(path: str, was: Any, now: Any, env: bool = False) -> Change | None:
    if was == now:
        return None
    if env:
        return _env_change(path, dict(was), dict(now))
    return Change(path, _shown(was), _shown(now))


def _env_change(path: str, was: dict[str, str], now: dict[str, str]) -> Change:
    """Names only: an environment value may be a secret."""
    def names(pick: Callable[[str], bool], source: dict[str, str]) -> list[str]:
        return sorted(name for name in source if pick(name))

    parts = [f"{', '.join(found)} {what}" for what, found in (
        ("added", names(lambda n: n not in was, now)),
        ("changed", names(lambda n: n in was and was[n] != now[n], now)),
        ("removed", names(lambda n: n not in now, was))) if found]
    return Change(path, f"{len(was)} variable{'s' if len(was) != 1 else ''}", "; ".join(parts) or "reordered")


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "(none)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "container_path"):  # a Volume
        return f"{value.host_path}:{value.container_path}:{value.mode.lower()}"
    return str(value)

