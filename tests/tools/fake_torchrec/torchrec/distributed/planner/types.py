"""Topology, ParameterConstraints, PlannerError and the best plan's shards of the test double."""

HBM_CAP = 32 * 1024 ** 3     # the default when no hbm_cap is given


class PlannerError(Exception):
    pass


class Topology:
    def __init__(self, world_size, compute_device, hbm_cap=None, local_world_size=None,
                 **kwargs):
        if kwargs:
            raise TypeError("fake Topology: unexpected arguments %s" % sorted(kwargs))
        self.world_size = world_size
        self.compute_device = compute_device
        self.local_world_size = local_world_size if local_world_size is not None else world_size
        self.hbm_cap_given = hbm_cap         # as passed (None: not given), for the record
        self.hbm_cap = hbm_cap if hbm_cap is not None else HBM_CAP


class ParameterConstraints:
    def __init__(self, sharding_types=None, compute_kernels=None, pooling_factors=None,
                 **kwargs):
        if kwargs:
            raise TypeError("fake ParameterConstraints: unexpected arguments %s" % sorted(kwargs))
        self.sharding_types = sharding_types
        self.compute_kernels = compute_kernels
        self.pooling_factors = pooling_factors if pooling_factors is not None else [1.0]


class Storage:
    def __init__(self, hbm, ddr=0):
        self.hbm, self.ddr = hbm, ddr


class Shard:
    def __init__(self, size, offset, rank, storage):
        self.size, self.offset, self.rank, self.storage = size, offset, rank, storage


class ShardingOption:
    def __init__(self, name, sharding_type, compute_kernel, shards):
        self.name, self.sharding_type, self.compute_kernel = name, sharding_type, compute_kernel
        self.shards = shards
