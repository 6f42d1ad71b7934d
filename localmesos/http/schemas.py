"""The subset of the Mesos v1 protobuf schema the embedded master parses.

Field names, kinds, requiredness and enum values follow
``include/mesos/v1/{mesos,scheduler/scheduler,executor/executor}.proto`` of
Mesos 1.12.  Messages the master only passes through are ``raw``.
"""
from __future__ import annotations

from .protojson import Field, Registry

TASK_STATES = (
    "TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_FINISHED",
    "TASK_FAILED", "TASK_KILLED", "TASK_ERROR", "TASK_LOST", "TASK_DROPPED",
    "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_UNKNOWN",
)
TERMINAL_STATES = frozenset({
    "TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_ERROR", "TASK_LOST",
    "TASK_DROPPED", "TASK_GONE", "TASK_GONE_BY_OPERATOR",
})
SOURCES = ("SOURCE_MASTER", "SOURCE_AGENT", "SOURCE_EXECUTOR")
REASONS = (
    "REASON_COMMAND_EXECUTOR_FAILED", "REASON_CONTAINER_LAUNCH_FAILED", "REASON_CONTAINER_LIMITATION",
    "REASON_CONTAINER_LIMITATION_DISK", "REASON_CONTAINER_LIMITATION_MEMORY", "REASON_CONTAINER_PREEMPTED",
    "REASON_CONTAINER_UPDATE_FAILED", "REASON_MAX_COMPLETION_TIME_REACHED",
    "REASON_EXECUTOR_REGISTRATION_TIMEOUT", "REASON_EXECUTOR_REREGISTRATION_TIMEOUT",
    "REASON_EXECUTOR_TERMINATED", "REASON_EXECUTOR_UNREGISTERED", "REASON_FRAMEWORK_REMOVED",
    "REASON_GC_ERROR", "REASON_INVALID_FRAMEWORKID", "REASON_INVALID_OFFERS", "REASON_IO_SWITCHBOARD_EXITED",
    "REASON_MASTER_DISCONNECTED", "REASON_RECONCILIATION", "REASON_RESOURCES_UNKNOWN",
    "REASON_AGENT_DISCONNECTED", "REASON_AGENT_DRAINING", "REASON_AGENT_REMOVED",
    "REASON_AGENT_REMOVED_BY_OPERATOR", "REASON_AGENT_REREGISTERED", "REASON_AGENT_RESTARTED",
    "REASON_AGENT_UNKNOWN", "REASON_TASK_KILLED_DURING_LAUNCH", "REASON_TASK_CHECK_STATUS_UPDATED",
    "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED", "REASON_TASK_GROUP_INVALID", "REASON_TASK_GROUP_UNAUTHORIZED",
    "REASON_TASK_INVALID", "REASON_TASK_UNAUTHORIZED", "REASON_TASK_UNKNOWN",
)
FRAMEWORK_CAPABILITIES = (
    "UNKNOWN", "REVOCABLE_RESOURCES", "TASK_KILLING_STATE", "GPU_RESOURCES", "SHARED_RESOURCES",
    "PARTITION_AWARE", "MULTI_ROLE", "RESERVATION_REFINEMENT", "REGION_AWARE",
)
SCHEDULER_CALL_TYPES = (
    "UNKNOWN", "SUBSCRIBE", "TEARDOWN", "ACCEPT", "DECLINE", "ACCEPT_INVERSE_OFFERS",
    "DECLINE_INVERSE_OFFERS", "REVIVE", "KILL", "SHUTDOWN", "ACKNOWLEDGE", "ACKNOWLEDGE_OPERATION_STATUS",
    "RECONCILE", "RECONCILE_OPERATIONS", "MESSAGE", "REQUEST", "SUPPRESS", "UPDATE_FRAMEWORK",
)
EXECUTOR_CALL_TYPES = ("UNKNOWN", "SUBSCRIBE", "UPDATE", "MESSAGE", "HEARTBEAT")
OPERATION_TYPES = (
    "UNKNOWN", "LAUNCH", "LAUNCH_GROUP", "RESERVE", "UNRESERVE", "CREATE", "DESTROY",
    "GROW_VOLUME", "SHRINK_VOLUME", "CREATE_DISK", "DESTROY_DISK",
)


def _s(required: bool = False, repeated: bool = False) -> Field:
    return Field("string", required=required, repeated=repeated)


def _m(name: str, required: bool = False, repeated: bool = False) -> Field:
    return Field("message", name, required=required, repeated=repeated)


def _e(values: tuple[str, ...], required: bool = False, repeated: bool = False) -> Field:
    return Field("enum", values, required=required, repeated=repeated)


_RAW = Field("raw")
_RAW_LIST = Field("raw", repeated=True)
_BYTES = Field("bytes")
_DOUBLE = Field("double")
_INT = Field("int")
_BOOL = Field("bool")

SCHEMAS = Registry()
_d = SCHEMAS.define

for _id in ("FrameworkID", "OfferID", "AgentID", "TaskID", "ExecutorID", "OperationID"):
    _d(_id, value=_s(required=True))
_d("ContainerID", value=_s(required=True), parent=_m("ContainerID"))
_d("DurationInfo", nanoseconds=Field("int", required=True))
_d("KillPolicy", grace_period=_m("DurationInfo"))
_d("Filters", refuse_seconds=_DOUBLE)

_d("Capability", type=_e(FRAMEWORK_CAPABILITIES))
_d("FrameworkInfo",
   user=_s(required=True), name=_s(required=True), id=_m("FrameworkID"), failover_timeout=_DOUBLE,
   checkpoint=_BOOL, role=_s(), roles=_s(repeated=True), hostname=_s(), principal=_s(), webui_url=_s(),
   capabilities=_m("Capability", repeated=True), labels=_RAW, offer_filters=_RAW)

_d("Scalar", value=Field("double", required=True))
_d("Range", begin=Field("int", required=True), end=Field("int", required=True))
_d("Ranges", range=_m("Range", repeated=True))
_d("Set", item=_s(repeated=True))
_d("AllocationInfo", role=_s())
_d("Resource",
   provider_id=_RAW, name=_s(required=True), type=_e(("SCALAR", "RANGES", "SET", "TEXT"), required=True),
   scalar=_m("Scalar"), ranges=_m("Ranges"), set=_m("Set"), role=_s(), allocation_info=_m("AllocationInfo"),
   reservation=_RAW, reservations=_RAW_LIST, disk=_RAW, revocable=_RAW, shared=_RAW)

_d("URI", value=_s(required=True), executable=_BOOL, extract=_BOOL, cache=_BOOL, output_file=_s())
_d("SecretReference", name=_s(required=True), key=_s())
_d("SecretValue", data=Field("bytes", required=True))
_d("Secret", type=_e(("UNKNOWN", "REFERENCE", "VALUE")), reference=_m("SecretReference"), value=_m("SecretValue"))
_d("Variable", name=_s(required=True), type=_e(("UNKNOWN", "VALUE", "SECRET")), value=_s(), secret=_m("Secret"))
_d("Environment", variables=_m("Variable", repeated=True))
_d("VolumeSource", type=_e(("UNKNOWN", "DOCKER_VOLUME", "HOST_PATH", "SANDBOX_PATH", "SECRET", "CSI_VOLUME")),
   docker_volume=_RAW, host_path=_RAW, sandbox_path=_RAW, secret=_m("Secret"), csi_volume=_RAW)
_d("Volume", mode=_e(("RW", "RO"), required=True), container_path=_s(required=True), host_path=_s(), image=_RAW,
   source=_m("VolumeSource"))
_d("ContainerInfo", type=_e(("DOCKER", "MESOS"), required=True), volumes=_m("Volume", repeated=True), hostname=_s(),
   docker=_RAW, mesos=_RAW, network_infos=_RAW_LIST, linux_info=_RAW, rlimit_info=_RAW, tty_info=_RAW)
_d("CommandInfo",
   uris=_m("URI", repeated=True), environment=_m("Environment"), shell=_BOOL, value=_s(),
   arguments=_s(repeated=True), user=_s())
_d("ExecutorInfo",
   type=_e(("UNKNOWN", "DEFAULT", "CUSTOM")), executor_id=_m("ExecutorID", required=True),
   framework_id=_m("FrameworkID"), command=_m("CommandInfo"), container=_m("ContainerInfo"),
   resources=_m("Resource", repeated=True), name=_s(), source=_s(), data=_BYTES, discovery=_RAW,
   shutdown_grace_period=_m("DurationInfo"), labels=_RAW)
_d("TaskInfo",
   name=_s(required=True), task_id=_m("TaskID", required=True), agent_id=_m("AgentID", required=True),
   resources=_m("Resource", repeated=True), executor=_m("ExecutorInfo"), command=_m("CommandInfo"),
   container=_m("ContainerInfo"), health_check=_RAW, check=_RAW, kill_policy=_m("KillPolicy"), data=_BYTES, labels=_RAW,
   discovery=_RAW, max_completion_time=_m("DurationInfo"), limits=_RAW)
_d("TaskGroupInfo", tasks=_m("TaskInfo", repeated=True))
_d("TaskStatus",
   task_id=_m("TaskID", required=True), state=_e(TASK_STATES, required=True), message=_s(),
   source=_e(SOURCES), reason=_e(REASONS), data=_BYTES, agent_id=_m("AgentID"),
   executor_id=_m("ExecutorID"), timestamp=_DOUBLE, uuid=_BYTES, healthy=_BOOL, check_status=_RAW,
   labels=_RAW, container_status=_RAW, unreachable_time=_RAW, limitation=_RAW)

_d("Launch", task_infos=_m("TaskInfo", repeated=True))
_d("LaunchGroup", executor=_m("ExecutorInfo", required=True), task_group=_m("TaskGroupInfo", required=True))
_d("Operation",
   type=_e(OPERATION_TYPES), id=_m("OperationID"), launch=_m("Launch"), launch_group=_m("LaunchGroup"),
   reserve=_RAW, unreserve=_RAW, create=_RAW, destroy=_RAW, grow_volume=_RAW, shrink_volume=_RAW,
   create_disk=_RAW, destroy_disk=_RAW)

# scheduler::Call and its sub-messages.
_d("Subscribe", framework_info=_m("FrameworkInfo", required=True), force=_BOOL,
   suppressed_roles=_s(repeated=True), offer_constraints=_RAW)
_d("Accept", offer_ids=_m("OfferID", repeated=True), operations=_m("Operation", repeated=True),
   filters=_m("Filters"))
_d("Decline", offer_ids=_m("OfferID", repeated=True), filters=_m("Filters"))
_d("InverseOffers", inverse_offer_ids=_m("OfferID", repeated=True), filters=_m("Filters"))
_d("Roles", roles=_s(repeated=True))
_d("Kill", task_id=_m("TaskID", required=True), agent_id=_m("AgentID"), kill_policy=_m("KillPolicy"))
_d("Shutdown", executor_id=_m("ExecutorID", required=True), agent_id=_m("AgentID", required=True))
_d("Acknowledge", agent_id=_m("AgentID", required=True), task_id=_m("TaskID", required=True),
   uuid=Field("bytes", required=True))
_d("AcknowledgeOperationStatus", agent_id=_m("AgentID"), resource_provider_id=_RAW,
   uuid=Field("bytes", required=True), operation_id=_m("OperationID", required=True))
_d("ReconcileTask", task_id=_m("TaskID", required=True), agent_id=_m("AgentID"))
_d("Reconcile", tasks=_m("ReconcileTask", repeated=True))
_d("ReconcileOperations", operations=_RAW_LIST)
_d("SchedulerMessage", agent_id=_m("AgentID", required=True), executor_id=_m("ExecutorID", required=True),
   data=Field("bytes", required=True))
_d("Request", requests=_RAW_LIST)
_d("UpdateFramework", framework_info=_m("FrameworkInfo", required=True), suppressed_roles=_s(repeated=True),
   offer_constraints=_RAW)
_d("SchedulerCall",
   framework_id=_m("FrameworkID"), type=_e(SCHEDULER_CALL_TYPES), subscribe=_m("Subscribe"),
   accept=_m("Accept"), decline=_m("Decline"), accept_inverse_offers=_m("InverseOffers"),
   decline_inverse_offers=_m("InverseOffers"), revive=_m("Roles"), kill=_m("Kill"), shutdown=_m("Shutdown"),
   acknowledge=_m("Acknowledge"), acknowledge_operation_status=_m("AcknowledgeOperationStatus"),
   reconcile=_m("Reconcile"), reconcile_operations=_m("ReconcileOperations"),
   message=_m("SchedulerMessage"), request=_m("Request"), suppress=_m("Roles"),
   update_framework=_m("UpdateFramework"))

# executor::Call.
_d("ExecutorUpdate", status=_m("TaskStatus", required=True))
_d("ExecutorSubscribe", unacknowledged_tasks=_m("TaskInfo", repeated=True),
   unacknowledged_updates=_m("ExecutorUpdate", repeated=True))
_d("ExecutorMessage", data=Field("bytes", required=True))
_d("ExecutorCall",
   executor_id=_m("ExecutorID", required=True), framework_id=_m("FrameworkID", required=True),
   type=_e(EXECUTOR_CALL_TYPES), subscribe=_m("ExecutorSubscribe"), update=_m("ExecutorUpdate"),
   message=_m("ExecutorMessage"))

# master::Call (operator API), only what the embedded master implements.
_d("MarkAgentGone", agent_id=_m("AgentID", required=True))
_d("ReserveResources", agent_id=_m("AgentID", required=True), source=_m("Resource", repeated=True),
   resources=_m("Resource", repeated=True))
_d("UnreserveResources", agent_id=_m("AgentID", required=True), resources=_m("Resource", repeated=True))
_d("QuotaConfig", role=_s(required=True), guarantees=_RAW, limits=_RAW)
_d("UpdateQuota", force=_BOOL, quota_configs=_m("QuotaConfig", repeated=True))
_d("WeightInfo", weight=Field("double", required=True), role=_s())
_d("UpdateWeights", weight_infos=_m("WeightInfo", repeated=True))
# Planned change: draining (google.protobuf.Duration, which Mesos takes as an object only) and the
# maintenance schedule (include/mesos/v1/maintenance/maintenance.proto).
_d("Duration", seconds=_INT, nanos=_INT)
_d("DrainAgent", agent_id=_m("AgentID", required=True), max_grace_period=_m("Duration"), mark_gone=_BOOL)
_d("AgentCall", agent_id=_m("AgentID", required=True))
_d("MachineID", hostname=_s(), ip=_s())
_d("TimeInfo", nanoseconds=Field("int", required=True))
_d("Unavailability", start=_m("TimeInfo", required=True), duration=_m("DurationInfo"))
_d("MaintenanceWindow", machine_ids=_m("MachineID", repeated=True), unavailability=_m("Unavailability", required=True))
_d("Schedule", windows=_m("MaintenanceWindow", repeated=True))
_d("UpdateMaintenanceSchedule", schedule=_m("Schedule", required=True))
_d("Machines", machines=_m("MachineID", repeated=True))
_d("OperatorCall", type=_s(), mark_agent_gone=_m("MarkAgentGone"), reserve_resources=_m("ReserveResources"),
   unreserve_resources=_m("UnreserveResources"), update_quota=_m("UpdateQuota"),
   update_weights=_m("UpdateWeights"), drain_agent=_m("DrainAgent"), deactivate_agent=_m("AgentCall"),
   reactivate_agent=_m("AgentCall"), update_maintenance_schedule=_m("UpdateMaintenanceSchedule"),
   start_maintenance=_m("Machines"), stop_maintenance=_m("Machines"))
