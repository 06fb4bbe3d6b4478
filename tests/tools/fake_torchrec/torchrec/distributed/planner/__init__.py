"""torchrec.distributed.planner of the test double (../../../README.md has its rules)."""
from torchrec.distributed.planner.planners import EmbeddingShardingPlanner  # noqa: F401
from torchrec.distributed.planner.types import ParameterConstraints, PlannerError, \
    Topology  # noqa: F401
