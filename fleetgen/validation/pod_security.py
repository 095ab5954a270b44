"""The Pod Security Standards as fleetgen checks them: which controls a pod spec breaks at a level.

Pod Security Admission enforces a namespace's `pod-security.kubernetes.io/enforce` level on every
pod created there, and warns for workloads (Deployments, Jobs) whose template would be refused.
These are the controls of the `baseline` and `restricted` levels as the Kubernetes documentation
states them for the latest version (which a namespace without `enforce-version` gets), so that a
workload fleetgen writes, or a test, can be held against a team namespace's level offline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

LEVELS = ("privileged", "baseline", "restricted")
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ping_group_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"})
WORKLOAD_TEMPLATES = {  # kind -> path of its pod template
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def pod_templates(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(where, metadata, spec) of each pod an object makes: a Pod, a workload's template, a Volcano Job's tasks."""
    kind = body.get("kind")
    if kind == "Pod":
        yield "spec", body.get("metadata") or {}, body.get("spec") or {}
        return
    if kind == "Job" and str(body.get("apiVersion", "")).startswith("batch.volcano.sh/"):
        for t, task in enumerate((body.get("spec") or {}).get("tasks") or []):
            pod = task.get("template") or {}
            yield f"spec.tasks[{t}].template.spec", pod.get("metadata") or {}, pod.get("spec") or {}
        return
    path = WORKLOAD_TEMPLATES.get(str(kind))
    if path is None:
        return
    template: Any = body
    for part in path:
        template = (template or {}).get(part) if isinstance(template, dict) else None
    if isinstance(template, dict):
        yield ".".join(path) + ".spec", template.get("metadata") or {}, template.get("spec") or {}


def _containers(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(field) or []):
            yield f"{field}[{index}]", container


def _context(container: dict[str, Any]) -> dict[str, Any]:
    return container.get("securityContext") or {}


def baseline(metadata: dict[str, Any], spec: dict[str, Any]) -> Iterator[str]:
    """What the baseline level refuses: known privilege escalations."""
    pod = spec.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield f"{field}: true shares the node's namespaces"
    if (pod.get("windowsOptions") or {}).get("hostProcess"):
        yield "securityContext.windowsOptions.hostProcess: true runs on the host"
    for volume in spec.get("volumes") or []:
        if "hostPath" in volume:
            yield f"volume {volume.get('name')!r} is a hostPath: the node's files"
    for sysctl in pod.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            yield f"sysctl {sysctl.get('name')!r} is not one of the safe ones"
    yield from _selinux("securityContext", pod)
    yield from _seccomp_not_unconfined("securityContext", pod)
    yield from _apparmor_not_unconfined("securityContext", pod)
    for key, value in (metadata.get("annotations") or {}).items():
        if (
            key.startswith("container.apparmor.security.beta.kubernetes.io/")
            and value not in ("runtime/default",)
            and not str(value).startswith("localhost/")
        ):
            yield f"annotation {key}: {value} lifts AppArmor"
    for where, container in _containers(spec):
        context = _context(container)
        if context.get("privileged"):
            yield f"{where}.securityContext.privileged: true"
        if (context.get("windowsOptions") or {}).get("hostProcess"):
            yield f"{where}.securityContext.windowsOptions.hostProcess: true runs on the host"
        added = [c for c in (context.get("capabilities") or {}).get("add") or [] if c not in BASELINE_CAPABILITIES]
        if added:
            yield f"{where}.securityContext.capabilities.add: {', '.join(added)} beyond the default set"
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                yield f"{where} hostPort {port['hostPort']} listens on the node"
        if context.get("procMount") not in (None, "Default"):
            yield f"{where}.securityContext.procMount: {context['procMount']} unmasks /proc"
        yield from _selinux(f"{where}.securityContext", context)
        yield from _seccomp_not_unconfined(f"{where}.securityContext", context)
        yield from _apparmor_not_unconfined(f"{where}.securityContext", context)
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            yield from _probe_host(f"{where}.{probe}", container.get(probe) or {})
        for hook in ("postStart", "preStop"):
            yield from _probe_host(f"{where}.lifecycle.{hook}", (container.get("lifecycle") or {}).get(hook) or {})


def _probe_host(where: str, handler: dict[str, Any]) -> Iterator[str]:
    for kind in ("httpGet", "tcpSocket"):
        if (handler.get(kind) or {}).get("host"):
            yield f"{where}.{kind}.host reaches past the pod"


def _selinux(where: str, context: dict[str, Any]) -> Iterator[str]:
    options = context.get("seLinuxOptions") or {}
    if options.get("type", "") not in SELINUX_TYPES or options.get("user") or options.get("role"):
        yield f"{where}.seLinuxOptions sets a custom SELinux type, user or role"


def _seccomp_not_unconfined(where: str, context: dict[str, Any]) -> Iterator[str]:
    if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
        yield f"{where}.seccompProfile.type: Unconfined"


def _apparmor_not_unconfined(where: str, context: dict[str, Any]) -> Iterator[str]:
    if (context.get("appArmorProfile") or {}).get("type") == "Unconfined":
        yield f"{where}.appArmorProfile.type: Unconfined"


def restricted(metadata: dict[str, Any], spec: dict[str, Any]) -> Iterator[str]:
    """What the restricted level refuses beyond baseline: current hardening practice."""
    pod = spec.get("securityContext") or {}
    for volume in spec.get("volumes") or []:
        kinds = [k for k in volume if k != "name"]
        if kinds and not set(kinds) <= RESTRICTED_VOLUMES:
            yield f"volume {volume.get('name')!r} is of type {', '.join(kinds)}, not one restricted allows"
    if pod.get("runAsUser") == 0:
        yield "securityContext.runAsUser: 0 runs as root"
    pod_seccomp = (pod.get("seccompProfile") or {}).get("type")
    for where, container in _containers(spec):
        context = _context(container)
        if context.get("allowPrivilegeEscalation") is not False:
            yield f"{where}.securityContext.allowPrivilegeEscalation must be false"
        non_root = context.get("runAsNonRoot", pod.get("runAsNonRoot"))
        if non_root is not True:
            yield f"{where}: runAsNonRoot must be true (in the pod's or the container's securityContext)"
        if context.get("runAsUser") == 0:
            yield f"{where}.securityContext.runAsUser: 0 runs as root"
        seccomp = (context.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            yield f"{where}: seccompProfile.type must be RuntimeDefault or Localhost (in the pod's or the container's securityContext)"
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            yield f"{where}.securityContext.capabilities.drop must include ALL"
        added = [c for c in capabilities.get("add") or [] if c != "NET_BIND_SERVICE"]
        if added:
            yield f"{where}.securityContext.capabilities.add: only NET_BIND_SERVICE, not {', '.join(added)}"


def violations(level: str, metadata: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Every control of `level` the pod (its metadata and spec) breaks; none at `privileged`."""
    if level == "privileged":
        return []
    found = list(baseline(metadata, spec))
    if level == "restricted":
        found += restricted(metadata, spec)
    return found


def object_violations(level: str, body: dict[str, Any]) -> list[str]:
    """Every control of `level` the pods `body` makes would break, each prefixed with where its pod spec is."""
    return [f"{where}: {problem}" for where, metadata, spec in pod_templates(body) for problem in violations(level, metadata, spec)]
