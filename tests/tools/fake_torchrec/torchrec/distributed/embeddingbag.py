"""EmbeddingBagCollectionSharder of the test double: a marker the planner records."""


class EmbeddingBagCollectionSharder:
    def __init__(self, fused_params=None, **kwargs):
        self.fused_params = fused_params
