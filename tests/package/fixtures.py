"""An options document that sets every leaf of the schema to something other than its default,
with the characters that break naive escaping (quotes, backslashes, newlines, &, <, shell
syntax) and numbers that Cosmos writes the Java way (3.0E9, 1.0E-4, 1.23456785E7)."""

FULL_OPTIONS = {
    "service": {
        "name": "team-a/mnist",
        "user": "nobody",
        "role": "tfmesos-role",
        "revocable": True,
        "principal": "tfmesos-principal",
        "secret_name": "tfmesos/principal-secret",
        "api_token_secret": "tfmesos/api-token",
        "zk_auth_secret": "tfmesos/zk-auth",
        "api_token_reads": True,
        "mesos_master": "zk://zk-1.example:2181,zk-2.example:2181/mesos",
        "zk": "zk://zk-1.example:2181/tfmesos-state/mnist",
        "state_dir": "/var/lib/tfmesos",
        "failover_timeout": 3000000000,
        "api_port": 8123,
        "cpus": 1.25,
        "mem": 1536,
    },
    "job": {
        "command": "python3 train.py --msg \"it's <ok> & done\" \\\n  --path $HOME/x",
        "workdir": "/srv/job",
        "env": ["A=1", "QUOTED=say \"hi\" & <b>", "EMPTY=", "SHELL=*.py $(touch pwned) `touch pwned2`"],
        "secret_env": ["AWS_SECRET_ACCESS_KEY=mnist/aws-secret-key", "DB_PASSWORD=mnist/db.password"],
        "secret_files": ["keys/gcs.json=mnist/gcs-key", "krb5.keytab=mnist/keytab"],
        "uris": ["https://example.com/code.tar.gz", "hdfs://nn/data?x=1&y=2", "--"],
        "volumes": ["/data/shared:/mnt/shared:ro", "/scratch:scratch"],
        "image": "tensorflow/tensorflow:2.16.1",
        "python": "/usr/bin/python3",
        "checkpoint_dir": "/mnt/ckpt/mnist",
        "legacy_keras": False,
    },
    "roles": {
        "ps": {
            "count": 2, "cpus": 0.75, "mem": 2048, "disk": 100, "gpus": 1, "command": "serve {job_name}",
            "server": False, "env": ["PS=1"], "resources": ["fpgas:1"], "restart_policy": "Always", "max_restarts": 5,
        },
        "worker": {
            "count": 4, "cpus": 2, "mem": 4096.5, "disk": 10, "gpus": 2, "command": "work {task_index}",
            "server": True, "env": ["W=2", "W2=two words"], "resources": ["fpgas:2", "licences:0.5"], "restart_policy": "OnFailure", "max_restarts": 0,
        },
        "chief": {
            "count": 1, "cpus": 0.25, "mem": 512, "disk": 1, "gpus": 3, "command": "lead {worker_hosts}",
            "server": True, "env": ["C=3"], "resources": ["licences:1"], "restart_policy": "ExitCode", "max_restarts": 7,
        },
        "evaluator": {
            "count": 1, "cpus": 0.3, "mem": 700, "disk": 2, "gpus": 4, "command": "eval",
            "server": True, "env": ["E=4"], "resources": ["nics:0"], "restart_policy": "OnFailure", "max_restarts": 1,
        },
    },
    "policies": {
        "success": "all_workers",
        "max_job_restarts": 0,
        "backoff_seconds": 0.5,
        "backoff_max_seconds": 0.0001,
        "startup_timeout_seconds": 12345678.5,
        "placement_timeout_seconds": 60,
        "queue_timeout_seconds": 900,
        "active_deadline_seconds": 3600,
        "stop_grace_seconds": 45,
        "maintenance_margin_seconds": 600,
    },
    "tensorboard": {"enabled": True, "logdir": "/shared/summaries", "cpus": 0.3, "mem": 600},
}
