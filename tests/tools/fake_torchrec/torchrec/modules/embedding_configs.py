"""EmbeddingBagConfig and DataType of the test double."""
import enum


class DataType(enum.Enum):
    FP32 = "FP32"
    FP16 = "FP16"
    BF16 = "BF16"
    INT8 = "INT8"
    INT4 = "INT4"
    INT2 = "INT2"


# bytes per element, for the double's memory check
DATA_TYPE_BYTES = {DataType.FP32: 4.0, DataType.FP16: 2.0, DataType.BF16: 2.0,
                   DataType.INT8: 1.0, DataType.INT4: 0.5, DataType.INT2: 0.25}


class EmbeddingBagConfig:
    def __init__(self, num_embeddings, embedding_dim, name="", data_type=DataType.FP32,
                 feature_names=None, **kwargs):
        if kwargs:
            raise TypeError("fake EmbeddingBagConfig: unexpected arguments %s" % sorted(kwargs))
        if not isinstance(data_type, DataType):
            raise TypeError("fake EmbeddingBagConfig: data_type %r is not a DataType" % (data_type,))
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.name = name
        self.data_type = data_type
        self.feature_names = list(feature_names or [])
