"""The estimators of the test double: they hold what they are given (the planner records
the storage estimator's pipeline type)."""


class EmbeddingPerfEstimator:
    def __init__(self, topology, constraints=None, **kwargs):
        if kwargs:
            raise TypeError("fake EmbeddingPerfEstimator: unexpected arguments %s" % sorted(kwargs))
        self.topology, self.constraints = topology, constraints


class EmbeddingStorageEstimator:
    def __init__(self, topology, constraints=None, pipeline_type=None, **kwargs):
        if kwargs:
            raise TypeError("fake EmbeddingStorageEstimator: unexpected arguments %s"
                            % sorted(kwargs))
        self.topology, self.constraints = topology, constraints
        self.pipeline_type = pipeline_type
