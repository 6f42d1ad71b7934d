"""The master. May import ``localmesos.http``, the shared model and (for ``/state``) ``agent``.

- ``master`` (frameworks, offers, tasks), ``framework`` (its records), ``allocator``
  (allocation rounds, weights, quota), ``validation`` (framework and ACCEPT checks, Mesos'
  messages), ``status_updates`` (reliable per-task updates).
- Its HTTP side: ``master_api`` (routes), ``scheduler_api``, ``operator_api``, ``metrics``,
  ``web_ui`` (its page at ``/`` and a sandbox browser), ``state_json`` (``/state`` of master and
  agents), ``zk_contender`` (announcing the master in ZooKeeper).
"""
