"""The master. May import ``localmesos.http``, the shared model and (for ``/state``) ``agent``.

- ``master`` (its parts put together, its lifecycle, what agents tell it), over ``cluster`` (the
  records every part shares: agents, frameworks, offers, roles' settings, planned change). The
  parts: ``subscriptions`` (SUBSCRIBE, heartbeats, failover, removal, UPDATE_FRAMEWORK),
  ``scheduler_calls`` (ACCEPT, KILL, RECONCILE and the other calls of a subscribed framework),
  ``agents`` (registration, pings, unreachable and back, removal, reservations), ``tasks`` (task and
  executor bookkeeping, the agents' status updates), ``offers`` (made from the allocator's grants,
  sent, ended).
- Planned change: ``draining`` (DRAIN_AGENT, DEACTIVATE_AGENT, REACTIVATE_AGENT), ``maintenance``
  (the schedule, machines down and up), ``inverse_offers`` (sent after each allocation round,
  answered, rescinded).
- ``allocator`` (allocation rounds, weights, quota: reads ``cluster`` through its
  ``AllocatorView``, returns grants), ``usage`` (what roles and frameworks hold: DRF and quota
  numbers), ``framework`` (framework, task and offer records), ``validation`` (framework and ACCEPT
  checks, Mesos' messages), ``status_updates`` (reliable per-task updates).
- Its HTTP side: ``master_api`` (routes), ``scheduler_api``, ``operator_api``, ``maintenance_api``
  (``/maintenance/*``, ``/machine/*`` and the operator's maintenance calls), ``metrics``,
  ``web_ui`` (its page at ``/`` and a sandbox browser), ``state_json`` (``/state`` of master and
  agents), ``agents_json`` (GET_AGENTS), ``zk_contender`` (announcing the master in ZooKeeper).
"""
