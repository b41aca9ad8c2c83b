"""Image captioning on Flickr8k, training: RNN/train.py of image-captioning (therrshan), a GRU decoder over
precomputed InceptionV3 image features, fitted one epoch per call over data_generator, a Python generator that
tokenizes, pads and one-hot encodes each image's captions word by word for every step.

Source: https://github.com/therrshan/image-captioning at c6fc59954f4b406beaba78b1adbe11f69aa254c3 (RNN/train.py,
RNN/data_loader.py, RNN/model.py). Re-written here in the source's structure and order, not copied:
get_image_ids reads the training image list (the ids before '.'); get_image_captions reads descriptions.txt
and wraps each caption of a training image in 'startseq ... endseq'; get_image_features unpickles features.pkl
and keeps the training ids; create_tokenizer fits a Tokenizer on all captions (vocab_size = word_index + 1,
max_len = the longest caption in words); create_sequences, for each caption of one image, calls
texts_to_sequences and, for every prefix, pad_sequences (post) and to_categorical of the next word; data_generator
loops forever over the images and yields one image's [[features, prefixes], next words] per step; define_model
is Dropout + Dense(256) on the 2048-d feature, Embedding(300, mask_zero) + Dropout + GRU(256) on the prefix,
added, Dense(256) and a softmax over the vocabulary, compiled with categorical cross-entropy / adam; train.py
sets steps = len(train_descriptions) and, for each epoch, builds a new generator, calls
``fit_generator(generator, epochs=1, steps_per_epoch=steps, verbose=1)`` and saves the model.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/caption_flickr``: the RNN/ folder's layout, 300 training images of
360 with 5 generated captions each and random 2048-d features); the embedding 64 for 300 and the GRU and Dense
64 for 256 (a step runs on 2 CPU cores); epochs 3 for 20; ``fit_generator`` -> ``fit`` (Keras 3); Keras 3 has no
``keras.preprocessing.text.Tokenizer``: a minimal Tokenizer with the same fit_on_texts / texts_to_sequences
(lower case, punctuation filtered, split on spaces, indices by descending count) is defined here;
``keras.preprocessing.sequence.pad_sequences`` -> ``keras.utils.pad_sequences``; tokenizer.pkl and the models
written under a temporary folder, ``.h5`` -> ``.keras``; model.summary() kept.
"""

import os
import string
import tempfile
from collections import Counter
from pickle import dump, load

from keras.initializers import RandomUniform
from keras.layers import GRU, Dense, Dropout, Embedding, Input, add
from keras.models import Model
from keras.utils import pad_sequences, to_categorical
from numpy import array

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "caption_flickr")
OUT = os.path.join(tempfile.gettempdir(), "caption_flickr_out")


FILTERS = string.punctuation.replace("'", "") + "\t\n"  # Keras 2's default filters (no apostrophe)


class Tokenizer:
    """keras.preprocessing.text.Tokenizer's defaults, as the source uses them (not in Keras 3)."""

    def __init__(self, filters=FILTERS, lower=True, split=" "):
        self.filters, self.lower, self.split = filters, lower, split
        self.word_counts = Counter()
        self.word_index = {}

    def _words(self, text):
        text = text.lower() if self.lower else text
        text = text.translate(str.maketrans({c: self.split for c in self.filters}))
        return [w for w in text.split(self.split) if w]

    def fit_on_texts(self, texts):
        for text in texts:
            self.word_counts.update(self._words(text))
        ordered = sorted(self.word_counts.items(), key=lambda kv: kv[1], reverse=True)
        self.word_index = {w: i + 1 for i, (w, _) in enumerate(ordered)}

    def texts_to_sequences(self, texts):
        return [[self.word_index[w] for w in self._words(t) if w in self.word_index] for t in texts]


# ----------------------------------------------------------------------------- data_loader.py
def get_image_ids(filename):
    file = open(filename, "r")
    text = file.read()
    img_ids = list()
    for line in text.split("\n"):
        img_id = line.split(".")[0]
        img_ids.append(img_id)
    return set(img_ids)


def get_image_captions(filename, dataset):
    file = open(filename, "r")
    text = file.read()
    captions = dict()
    for line in text.split("\n"):
        tokens = line.split()
        image_id, image_desc = tokens[0], tokens[1:]

        if image_id in dataset:
            if image_id not in captions:
                captions[image_id] = list()
            caption = "startseq " + " ".join(image_desc) + " endseq"

            captions[image_id].append(caption)
    return captions


def get_image_features(filename, dataset):
    all_features = load(open(filename, "rb"))

    features = {k: all_features[k] for k in dataset if k in all_features}
    return features


def create_tokenizer(captions):
    descriptions = list()
    for img_id in captions.keys():
        [descriptions.append(d) for d in captions[img_id]]
    tokenizer = Tokenizer()
    tokenizer.fit_on_texts(descriptions)

    vocab_size = len(tokenizer.word_index) + 1
    max_len = max(len(d.split()) for d in descriptions)

    return tokenizer, vocab_size, max_len


def create_sequences(tokenizer, max_length, true_captions, image, vocab_size):
    X1, X2, y = list(), list(), list()
    for caption in true_captions:
        seq = tokenizer.texts_to_sequences([caption])[0]
        for i in range(1, len(seq)):
            in_seq, out_seq = seq[:i], seq[i]
            in_seq = pad_sequences([in_seq], maxlen=max_length, padding="post", truncating="post")[0]

            out_seq = to_categorical([out_seq], num_classes=vocab_size)[0]

            X1.append(image)
            X2.append(in_seq)
            y.append(out_seq)
    return array(X1), array(X2), array(y)


def data_generator(captions, image_features, tokenizer, max_length, vocab_size):
    while 1:
        for img_id, true_captions in captions.items():
            image = image_features[img_id][0]
            in_img, in_seq, out_word = create_sequences(tokenizer, max_length, true_captions, image, vocab_size)
            yield ((in_img, in_seq), out_word)


# ----------------------------------------------------------------------------- model.py
def define_model(vocab_size, max_length, EMBEDDING_DIM=64):

    inputs1 = Input(shape=(2048,))
    fe1 = Dropout(0.125)(inputs1)
    fe2 = Dense(64, activation="relu")(fe1)

    inputs2 = Input(shape=(max_length,))
    se1 = Embedding(
        input_dim=vocab_size,
        output_dim=EMBEDDING_DIM,
        trainable=True,
        mask_zero=True,
        embeddings_initializer=RandomUniform(minval=-0.05, maxval=0.05)
    )(inputs2)
    se2 = Dropout(0.125)(se1)
    se3 = GRU(64)(se2)

    decoder1 = add([fe2, se3])
    decoder2 = Dense(64, activation="relu")(decoder1)
    outputs = Dense(vocab_size, activation="softmax")(decoder2)

    model = Model(inputs=[inputs1, inputs2], outputs=outputs)

    model.compile(loss="categorical_crossentropy", optimizer="adam")
    model.summary()

    return model


# ----------------------------------------------------------------------------- train.py
if __name__ == "__main__":
    os.makedirs(os.path.join(OUT, "models"), exist_ok=True)
    train_ids = os.path.join(DATA, "data/Flicker8k_text/Flickr_8k.trainImages.txt")
    train_image_ids = get_image_ids(train_ids)
    train_descriptions = get_image_captions(os.path.join(DATA, "descriptions.txt"), train_image_ids)
    train_image_features = get_image_features(os.path.join(DATA, "features.pkl"), train_image_ids)
    tokenizer, vocab_size, max_length = create_tokenizer(train_descriptions)
    dump(tokenizer, open(os.path.join(OUT, "tokenizer.pkl"), "wb"))

    rnn = define_model(vocab_size, max_length)
    epochs = 3
    steps = len(train_descriptions)

    for i in range(epochs):
        generator = data_generator(train_descriptions, train_image_features, tokenizer, max_length, vocab_size)
        rnn.fit(generator, epochs=1, steps_per_epoch=steps, verbose=1)
        rnn.save(os.path.join(OUT, "models", "model_" + str(i) + ".keras"))
