from relevance_dataset import read_tfrecords


def fit(model, files, parse_fn):
    model.fit(read_tfrecords(files, parse_fn, 128), epochs=10)
