import json

import pytest

from tfmesos.core.tensorflow.clusterspec import cluster_spec, substitute_placeholders, tf_config
from tfmesos.core.spec import TaskKey

EP = {
    TaskKey("ps", 0): "h:1", TaskKey("worker", 1): "h:3", TaskKey("worker", 0): "h:2",
    TaskKey("chief", 0): "h:4", TaskKey("evaluator", 0): "h:5",
}


def test_cluster_is_ordered_by_index_and_tf_config_has_the_task():
    cluster = cluster_spec(EP)
    assert cluster["worker"] == ["h:2", "h:3"]
    cfg = tf_config(cluster, TaskKey("worker", 1))
    assert cfg["task"] == {"type": "worker", "index": 1}
    assert "evaluator" not in cfg["cluster"], "TensorFlow's evaluator is outside the cluster"
    assert json.loads(json.dumps(cfg)) == cfg


def test_missing_index_is_an_error():
    with pytest.raises(ValueError, match="worker"):
        cluster_spec({TaskKey("worker", 1): "h:1"})


def test_placeholders_substituted_and_shell_variables_untouched():
    cluster = cluster_spec(EP)
    cmd = "train --ps {ps_hosts} --workers {worker_hosts} --job {job_name} --i {task_index} --x ${HOME} {other}"
    out = substitute_placeholders(cmd, cluster, TaskKey("worker", 1))
    assert out == "train --ps h:1 --workers h:2,h:3 --job worker --i 1 --x ${HOME} {other}"
