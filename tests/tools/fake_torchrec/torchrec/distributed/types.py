"""The plan's types in the test double: PipelineType, ParameterSharding, ShardingPlan and the
sharding spec's pieces (shaped like TorchRec's, for what the script reads)."""
import enum


class PipelineType(enum.Enum):
    NONE = "none"
    TRAIN_BASE = "train_base"
    TRAIN_SPARSE_DIST = "train_sparse_dist"
    TRAIN_PREFETCH_SPARSE_DIST = "train_prefetch_sparse_dist"


class Placement:
    """like torch's _remote_device "rank:r/cuda:l": rank() and str()"""

    def __init__(self, rank, device):
        self._rank, self._device = rank, device

    def rank(self):
        return self._rank

    def device(self):
        return self._device

    def __str__(self):
        return "rank:%d/%s" % (self._rank, self._device)

    __repr__ = __str__


class ShardMetadata:
    def __init__(self, shard_offsets, shard_sizes, placement):
        self.shard_offsets = list(shard_offsets)
        self.shard_sizes = list(shard_sizes)
        self.placement = placement


class EnumerableShardingSpec:
    def __init__(self, shards):
        self.shards = list(shards)


class ParameterSharding:
    def __init__(self, sharding_type, compute_kernel, ranks=None, sharding_spec=None):
        self.sharding_type = sharding_type
        self.compute_kernel = compute_kernel
        self.ranks = ranks
        self.sharding_spec = sharding_spec


class EmbeddingModuleShardingPlan(dict):
    """table name -> ParameterSharding"""


class ShardingPlan:
    def __init__(self, plan):
        self.plan = plan      # module path -> EmbeddingModuleShardingPlan
