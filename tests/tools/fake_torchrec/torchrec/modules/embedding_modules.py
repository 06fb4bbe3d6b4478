"""EmbeddingBagCollection of the test double: one weight per table (on the given device,
the meta device for the script), in the order of the configs."""
import torch


class EmbeddingBagCollection(torch.nn.Module):
    def __init__(self, tables, device=None, is_weighted=False):
        super().__init__()
        names = [t.name for t in tables]
        if len(set(names)) != len(names):
            raise ValueError("fake EmbeddingBagCollection: duplicate table names %s" % names)
        self._configs = list(tables)
        self.weights = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.empty(t.num_embeddings, t.embedding_dim, device=device))
             for t in tables])

    def embedding_bag_configs(self):
        return list(self._configs)

    def table_weights(self):
        """[(config, weight)] in order"""
        return list(zip(self._configs, self.weights))
