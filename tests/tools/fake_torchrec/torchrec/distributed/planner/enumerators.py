"""EmbeddingEnumerator of the test double: holds what it is given (the planner records it)."""


class EmbeddingEnumerator:
    def __init__(self, topology, batch_size, constraints=None, estimator=None, **kwargs):
        if kwargs:
            raise TypeError("fake EmbeddingEnumerator: unexpected arguments %s" % sorted(kwargs))
        self.topology = topology
        self.batch_size = batch_size
        self.constraints = constraints
        if estimator is None:
            estimator = []
        self.estimators = list(estimator) if isinstance(estimator, list) else [estimator]
