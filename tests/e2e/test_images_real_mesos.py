"""Every task in an image, on a real Mesos agent (the Mesos containerizer's Docker image support, no
Docker and no registry: the agent reads `docker save` tarballs from --docker_registry).

Collected only when TFMESOS_REAL_MESOS names the real-mesos scripts (`make test-real-mesos`); the
images come from `make images-real-mesos` (tfmesos/tfmesos:<version>, the same with TensorFlow
2.16, and the bare Debian base, which has python3 but neither tfmesos nor TensorFlow), exported to
TFMESOS_IMAGE_DIR (default ~/.cache/tfmesos-image/registry, as the Makefile's IMAGE_DIR).

One cluster for the module: a master on TFMESOS_IMAGES_MESOS_PORT (default 7050) and one
image-capable agent after it, with a Docker store of its own (the store caches images by name, so
a store kept between runs would serve a rebuilt image's old layers).
"""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

import tfmesos

from tests import zookeeper
from tests.package.helpers import app_definition_problems
from tests.e2e.harness import ROOT, LineProcess, accuracy, eventually, run_scheduler, stop_scheduler, wait_gone, write_options
from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_marathon_app import api_on_loopback, get, poll, render_package

# Side by side (pytest-xdist) these tests stay in one worker: they share the module's cluster (one
# agent with the linux launcher and cgroups isolation, on fixed ports), started once there.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(
    "mesos-images", reason="one cluster for the module, on fixed ports, with cgroups isolation")]
REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the suite runs with a HOME of its own
REGISTRY = Path(os.environ.get("TFMESOS_IMAGE_DIR") or REAL_HOME / ".cache" / "tfmesos-image" / "registry")
PORT = int(os.environ.get("TFMESOS_IMAGES_MESOS_PORT", "7050"))
IMAGE = f"tfmesos/tfmesos:{tfmesos.__version__}"
OLD_IMAGE = f"{IMAGE}-tf2.16"
BARE_IMAGE = "tfmesos-base:bookworm"  # python3 without tfmesos or TensorFlow
MARKER = "/etc/tfmesos-image"  # baked into the tfmesos image only: "tfmesos V\ntensorflow V\ntf-keras V\nsource DIGEST\n"
# The digest of this tree's build context (what build.sh passes as TFMESOS_SOURCE).
SOURCE = subprocess.run([sys.executable, str(ROOT / "tools" / "image" / "source_digest.py"), str(ROOT)],
                        capture_output=True, text=True, check=True).stdout.strip()
EXAMPLE = ROOT / "examples" / "pss_digits"
AGENT_PORTS = (PORT + 1000, PORT + 1999)  # 8050-8999 by default: clear of helper clusters' ranges


class ImageMesos(RealMesos):
    """RealMesos whose agent runs containers from images: the linux launcher, filesystem
    isolation and the docker runtime (image env, workdir), images read from REGISTRY."""

    def _script(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        super()._script(name, *args, env={"LAUNCHER": "linux",
                                          "ISOLATION": "filesystem/linux,docker/runtime,cgroups/cpu,cgroups/mem",
                                          **(env or {})})

    def leftovers(self) -> list[psutil.Process]:
        """Also what runs inside containers (their cwd and MESOS_SANDBOX are container paths):
        processes whose agent endpoint is one of ours."""
        ours = {f"127.0.0.1:{self.agent_port(i)}" for i in range(len(self.agents))}
        found = super().leftovers()
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.environ().get("MESOS_AGENT_ENDPOINT") in ours and proc not in found:
                    found.append(proc)
            except (psutil.Error, OSError):
                continue
        return found

    def stop(self) -> None:
        """Also the mounts the linux launcher left under this cluster's home (its work dir is
        bind-mounted onto itself), deepest first, so that nothing of the run stays mounted."""
        super().stop()
        home = str(self.home.resolve())
        with open("/proc/self/mounts") as mounts:
            points = [line.split()[1] for line in mounts]
        for point in sorted((p for p in points if p == home or p.startswith(home + "/")), key=len, reverse=True):
            subprocess.run(["umount", point], capture_output=True, timeout=60)

    def sandboxes_of(self, executor_prefix: str) -> list[Path]:
        work = self.home / "run" / f"agent-{self.agent_port(0)}-work"
        return sorted(p for p in work.glob(f"slaves/*/frameworks/*/executors/{executor_prefix}*/runs/*")
                      if p.name != "latest")


def source_of(archive: Path) -> str | None:
    """The tree an exported image was built from: its org.tfmesos.source label, read from the
    `docker save` archive's image config (None where the image has no such label)."""
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        config = json.load(tar.extractfile(manifest[0]["Config"]))
    return ((config.get("config") or {}).get("Labels") or {}).get("org.tfmesos.source")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    images = [REGISTRY / f"{name}.tar" for name in (IMAGE, OLD_IMAGE, BARE_IMAGE)]
    missing = [str(p) for p in images if not p.is_file()]
    assert not missing, f"no exported image {missing}: run `make images-real-mesos` (IMAGE_DIR={REGISTRY})"
    stale = {str(p): source for p in images[:2] if (source := source_of(p)) != SOURCE}
    assert not stale, (f"exported images built from another tree (their org.tfmesos.source; this tree's is {SOURCE}): "
                       f"{stale}: run `make images-real-mesos` (IMAGE_DIR={REGISTRY})")
    home = tmp_path_factory.mktemp("mesos-images")
    mesos = ImageMesos(home, [f"cpus:8;mem:16384;disk:40000;ports:[{AGENT_PORTS[0]}-{AGENT_PORTS[1]}]"],
                       agent_flags=["--image_providers=docker", f"--docker_registry={REGISTRY}",
                                    f"--docker_store_dir={home / 'docker-store'}",
                                    "--image_provisioner_backend=overlay",
                                    # unpacking a 2 GB image on a busy 2-core machine takes over the 1 min default
                                    "--executor_registration_timeout=10mins"],
                       base_port=PORT)
    try:
        yield mesos
    finally:
        mesos.stop()


def job_folder(tmp_path: Path) -> Path:
    """The example's code on the host, given to the tasks as a volume at /job (the image has no copy)."""
    folder = tmp_path / "job"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "seen").mkdir()
    return folder


# Each task writes what it sees into the volume, then runs the example's training.
REPORTING = ('{ cat %s; echo "python $(command -v $TFMESOS_PYTHON)"; echo "sandbox $MESOS_SANDBOX"; '
             'echo "port $TFMESOS_PORT"; } > /job/seen/$TFMESOS_JOB_NAME-$TFMESOS_TASK_INDEX '
             '&& touch "$MESOS_SANDBOX/written-in-the-sandbox" && cat %s && exec $TFMESOS_PYTHON train.py') % (MARKER,
                                                                                                           MARKER)


def image_options(path: Path, folder: Path, name: str, image: str, **job: Any) -> Path:
    return write_options(path, base=EXAMPLE / "options.json", service={"name": name},
                         job={"image": image, "workdir": "/job", "volumes": [f"{folder}:/job:rw"],
                              "command": REPORTING, **job})


def tensorflow_of(report: str) -> str:
    """The TensorFlow version a task's report names, after checking it begins with the marker,
    which names the tf-keras release of that TensorFlow (model.fit under the strategies)."""
    found = re.match(rf"tfmesos {re.escape(tfmesos.__version__)}\ntensorflow (\S+)\ntf-keras (\S+)\n"
                     rf"source {SOURCE}\n", report)
    assert found, f"no {MARKER} of this tfmesos in the task's report: {report!r}"
    tensorflow, tf_keras = found.groups()
    assert tf_keras.split(".")[:2] == tensorflow.split(".")[:2], f"tf-keras {tf_keras} for TensorFlow {tensorflow}"
    return tensorflow


def assert_every_task_ran_in(cluster: ImageMesos, folder: Path, service: str, python: str) -> str:
    """Every task's executor ran in a root filesystem the agent provisioned from the image (the
    agent's own line in each sandbox), every task logged the image's TensorFlow version, and the
    chief (the one task that runs job.command; the servers run tfmesos' TF server) saw the image's
    marker, the interpreter on the image's PATH, the sandbox mount and an agent port. Returns the
    TensorFlow version."""
    seen = {p.name: p.read_text() for p in (folder / "seen").iterdir()}
    assert list(seen) == ["chief-0"], seen
    report = seen["chief-0"]
    version = tensorflow_of(report)
    assert f"python {python}\n" in report and "sandbox /mnt/mesos/sandbox\n" in report, report
    port = int(re.search(r"port (\d+)\n", report).group(1))
    assert AGENT_PORTS[0] <= port <= AGENT_PORTS[1], report
    runs = {}  # "role:index" -> its run's sandbox (executor ids are SERVICE.ROLE.INDEX.N)
    for run in cluster.sandboxes_of(f"{service}."):
        role, index = run.parts[-3][len(service) + 1:].split(".")[:2]
        if role in ("chief", "ps", "worker"):
            runs[f"{role}:{index}"] = run
    assert sorted(runs) == ["chief:0", "ps:0", "worker:0", "worker:1"], runs
    rootfses = cluster.home / "run" / f"agent-{cluster.agent_port(0)}-work" / "provisioner"
    for task, run in runs.items():
        assert f"Changing root to {rootfses.resolve()}/" in (run / "stderr").read_text(errors="replace"), task
        logged = (run / "stdout").read_text(errors="replace")
        assert (f"tensorflow {version}\n" if task == "chief:0" else f"(TensorFlow {version})") in logged, (task, logged)
    assert (runs["chief:0"] / "written-in-the-sandbox").is_file()
    return version


def test_the_host_has_no_image_marker_and_no_image_venv():
    # What the checks below tell apart: seen from a task, these exist only inside the image.
    assert not Path(MARKER).exists() and not Path("/opt/tfmesos").exists()


def test_main_example_runs_every_task_in_the_image(cluster, tmp_path):
    folder = job_folder(tmp_path)
    service = "image-digits"
    opts = image_options(tmp_path / "o.json", folder, service, IMAGE)
    run = run_scheduler(opts, "--master", cluster.address, "--state-dir", str(tmp_path / "state"))
    try:
        assert run.wait(600) == 0, run.output[-4000:]
    finally:
        stop_scheduler(run)
    assert f"job {service} SUCCEEDED" in run.output and accuracy(run.output) >= 0.9
    # job.python left empty: python3 on the image's PATH, the image's venv.
    assert_every_task_ran_in(cluster, folder, service, "/opt/tfmesos/bin/python3")
    assert not wait_gone(service, timeout=30)


def test_two_tensorflow_versions_side_by_side(cluster, tmp_path):
    runs, folders = {}, {}
    for service, image, python in (("tf-newest", IMAGE, ""), ("tf-2-16", OLD_IMAGE, "/opt/tfmesos/bin/python")):
        folders[service] = job_folder(tmp_path / service)
        opts = image_options(tmp_path / f"{service}.json", folders[service], service, image, python=python)
        runs[service] = run_scheduler(opts, "--master", cluster.address, "--state-dir", str(tmp_path / service / "st"))
    try:
        for run in runs.values():
            run.wait_for(r"chief:0 TASK_RUNNING", 300)  # both jobs run at once
        codes = {service: run.wait(600) for service, run in runs.items()}
    finally:
        for run in runs.values():
            stop_scheduler(run)
    assert codes == {"tf-newest": 0, "tf-2-16": 0}, {s: r.output[-3000:] for s, r in runs.items()}
    newest = assert_every_task_ran_in(cluster, folders["tf-newest"], "tf-newest", "/opt/tfmesos/bin/python3")
    # job.python given: used as it is, inside the image.
    old = assert_every_task_ran_in(cluster, folders["tf-2-16"], "tf-2-16", "/opt/tfmesos/bin/python")
    assert old.startswith("2.16.") and not newest.startswith("2.16."), (old, newest)


def test_keras_examples_fit_in_the_image_with_each_tensorflow_and_its_tf_keras(cluster, tmp_path):
    """Keras model.fit as TensorFlow's tutorials write it, in the image, on real Mesos: the
    multi-worker example on the newest TensorFlow and the parameter-server one on 2.16, at once,
    each image with its own tf-keras (tasks get TF_USE_LEGACY_KERAS=1 by default)."""
    runs = {}
    for service, example, image, python in (("keras-mwms-newest", "keras_mwms_digits", IMAGE, ""),
                                            ("keras-pss-2-16", "keras_pss_digits", OLD_IMAGE, "/opt/tfmesos/bin/python")):
        source = ROOT / "examples" / example
        folder = tmp_path / service
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__pycache__"))
        opts = write_options(tmp_path / f"{service}.json", base=source / "options.json", service={"name": service},
                             job={"image": image, "python": python, "workdir": "/job",
                                  "volumes": [f"{folder}:/job:rw"], "checkpoint_dir": "/job/ckpt"})
        runs[service] = run_scheduler(opts, "--master", cluster.address, "--state-dir", str(tmp_path / f"{service}-st"))
    try:
        codes = {service: run.wait(600) for service, run in runs.items()}
    finally:
        for run in runs.values():
            stop_scheduler(run)
    assert codes == {"keras-mwms-newest": 0, "keras-pss-2-16": 0}, {s: r.output[-3000:] for s, r in runs.items()}
    for service, run in runs.items():
        assert f"job {service} SUCCEEDED" in run.output and accuracy(run.output) >= 0.9, run.output[-3000:]
    assert (tmp_path / "keras-mwms-newest" / "ckpt" / "model.keras").is_file(), "worker 0 saved the model"
    assert list((tmp_path / "keras-pss-2-16" / "ckpt" / "ckpt").glob("ckpt-*.index")), "the chief's checkpoints"
    for service in runs:
        assert not wait_gone(service, timeout=30)


@pytest.mark.parametrize("image, agent_error, sandbox_error", [
    ("tfmesos/no-such-image:1", "Failed to find archive for image 'tfmesos/no-such-image:1'", None),
    (BARE_IMAGE, "Executor terminated", "No module named 'tfmesos'"),
], ids=["missing", "no-tfmesos"])
def test_an_image_that_cannot_run_the_executor_ends_the_job_within_a_minute(cluster, tmp_path, image, agent_error,
                                                                             sandbox_error):
    service = "bad-image-" + ("missing" if sandbox_error is None else "bare")
    opts = image_options(tmp_path / "o.json", job_folder(tmp_path), service, image)
    started = time.monotonic()
    run = run_scheduler(opts, "--master", cluster.address, "--state-dir", str(tmp_path / "state"))
    try:
        code = run.wait(60)
    finally:
        stop_scheduler(run)
    assert code != 0 and time.monotonic() - started < 60, run.output[-3000:]
    ended = re.search(rf"job {service} FAILED: (.*)", run.output)
    assert ended and f"$.job.image {image!r}" in ended.group(1) and agent_error in ended.group(1), run.output[-3000:]
    launched = re.findall(r"launch (\S+) as ", run.output)
    assert sorted(launched) == ["chief:0", "ps:0", "worker:0", "worker:1"], "nothing is launched again"
    if sandbox_error:  # why, in the executor's own words, in its sandbox
        assert any(sandbox_error in (s / "stderr").read_text(errors="replace")
                   for s in cluster.sandboxes_of(f"{service}.")), sandbox_error
    assert not wait_gone(service, timeout=30)


def test_the_scheduler_started_from_the_image_as_marathon_would_runs_the_job(cluster, tmp_path):
    """A stand-in for Marathon: a Mesos task (mesos-execute) with the image, the command line (args,
    no shell) and the environment of the app `tfmesos package render` makes from the package."""
    zk = zookeeper.ZooKeeper(tmp_path / "zk").start()
    service = "marathon-image-digits"
    folder = job_folder(tmp_path)
    opts = image_options(tmp_path / "o.json", folder, service, IMAGE)
    options = json.loads(opts.read_text())
    options["service"].update(mesos_master=cluster.address, zk=f"zk://{zk.hosts}/tfmesos-images")
    opts.write_text(json.dumps(options))
    rendered = render_package(opts)
    assert app_definition_problems(rendered) == []
    assert rendered["container"]["docker"]["image"] == IMAGE, "the package runs the image make image builds"
    app = api_on_loopback(rendered)
    port = AGENT_PORTS[1]  # the API's port: PORT0, as Marathon would pick from the offer
    env = {name: value for name, value in app["env"].items() if isinstance(value, str)}
    env.update(HOST="127.0.0.1", PORT0=str(port), PORT=str(port), PORTS=str(port), PORT_API=str(port),
               MARATHON_APP_ID=app["id"], MARATHON_APP_RESOURCE_CPUS=str(app["cpus"]),
               MARATHON_APP_RESOURCE_MEM=str(app["mem"]))
    task = {
        "name": app["id"].strip("/"), "task_id": {"value": f"{app['id'].strip('/')}.instance-0._app.1"},
        "agent_id": {"value": ""},
        "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": app["cpus"]}},
                      {"name": "mem", "type": "SCALAR", "scalar": {"value": app["mem"]}},
                      {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": port, "end": port}]}}],
        # As Marathon's TaskBuilder makes it for an app with a container and args: no value, so
        # that Mesos runs the image's entrypoint with these arguments.
        "command": {"shell": False, "arguments": app["args"],
                    "environment": {"variables": [{"name": k, "value": v} for k, v in sorted(env.items())]}},
        "container": {"type": "MESOS", "mesos": {"image": {"type": "DOCKER", "docker": {"name": IMAGE}}}},
    }
    (tmp_path / "task.json").write_text(json.dumps(task))
    marathon = LineProcess(["mesos-execute", f"--master={cluster.address}", f"--task=file://{tmp_path / 'task.json'}"])
    status_url = f"http://127.0.0.1:{port}/v1/status"
    try:
        marathon.wait_for(r"TASK_RUNNING", 300)
        final = poll(status_url, lambda code, body: code == 200 and body["phase"] in ("SUCCEEDED", "FAILED"), 600)
        assert final["phase"] == "SUCCEEDED" and final["name"] == service, final
        assert get(f"http://127.0.0.1:{port}/v1/health") == (200, {"healthy": True})
        state = cluster.state()
        assert service in {f["name"] for f in state["frameworks"] + state["completed_frameworks"]}
        assert [t["state"] for f in state["frameworks"] for t in f["tasks"] if t["id"] == task["task_id"]["value"]] == [
            "TASK_RUNNING"], "the scheduler's task is still up, serving the job's status as under Marathon"
        assert_every_task_ran_in(cluster, folder, service, "/opt/tfmesos/bin/python3")
        # The scheduler itself ran in the image: its sandbox's output is the image's tfmesos.
        [scheduler_sandbox] = cluster.sandboxes_of(task["task_id"]["value"])
        # The status reads SUCCEEDED as the job ends; the summary follows the framework's teardown.
        eventually(lambda: f"job {service} SUCCEEDED" in (scheduler_sandbox / "stdout").read_text(errors="replace") + (
            scheduler_sandbox / "stderr").read_text(errors="replace"), 120, "the scheduler's summary in its sandbox")
    finally:
        # Marathon would keep the app: here its framework is torn down, which kills the scheduler.
        for framework in cluster.state()["frameworks"]:
            if any(t["id"] == task["task_id"]["value"] for t in framework["tasks"]):
                cluster.operator({"type": "TEARDOWN", "teardown": {"framework_id": {"value": framework["id"]}}})
        marathon.kill(signal.SIGINT)
        try:
            marathon.wait(60)
        except subprocess.TimeoutExpired:
            marathon.killpg()
        zk.stop()
    assert not wait_gone(service, timeout=30)
