"""FIXED COPY (the one fix: each image file opened, scaled and pasted once and kept in memory; the triplets
still drawn at random for every batch).

Plankton image embeddings with a triplet network, training: train.py of plankton-siamese, a base network shared by
three inputs (anchor, positive, negative) fitted with a triplet loss over triplet_generator, a Python generator that
picks random triplets of files and opens, scales and pastes each image with PIL and NumPy for every batch.

Source: https://github.com/ketil-malde/plankton-siamese at a1f0b4ec519bd1986c6a5eef45c2609d9fde0d23 (train.py,
generators.py, create_model.py, config.py). Re-written here in the source's structure and order, not copied:
config sets train_dir data/train, val_dir data/validate, batch_size 20, learn_rate 0.01, lr_decay 0.9, iterations
5; mk_triplets(directory) lists the classes and their files once and yields, forever, a random positive class, a
different random negative class and three random files (anchor and positive of the first, negative of the
second); paste puts a mono image into channel 0 of a white (ones) 299x299x3 canvas; triplet_generator(batch_size,
cache_size, directory) builds each batch from batch_size triplets, ``np.array(Image.open(f)) / 256`` and paste for
each of the three images, and yields ``[a, p, n], y``; generators.py runs four test batches at import;
create_base_network is InceptionV3 (imagenet weights, no top) + GlobalAveragePooling2D + Dense(out_dim 64,
sigmoid); tripletize applies it to three Inputs and concatenates the outputs; std_triplet_loss(alpha=5) is
``max(|a - p|^2 - |a - n|^2 + alpha, 0)``; train.py compiles with SGD(lr=learn_rate, momentum=0.9), and for each of
10 iterations runs train_step, ``model.fit_generator(triplet_generator(batch_size, None, train_dir),
steps_per_epoch=1000, epochs=iterations, callbacks=[CSVLogger], validation_data=triplet_generator(batch_size, None,
val_dir), validation_steps=100)``, decays the learning rate, saves the base model and runs the clustering tests of
testing.py on the validation vectors.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/plankton_siamese/data``: 12 classes of 30 train and 8 validation
generated 96x96 grayscale images for the ZooScan set's 299x299 ones, so in_dim (96, 96, 3) and a 96 canvas);
InceptionV3 with imagenet weights -> a small CNN (Conv2D 16/32/64, 3x3, stride 2, relu) with the same pooling
and Dense head (no weights download here; a step runs on 2 CPU cores); steps_per_epoch 30 for 1000 and
validation_steps 3 for 100 (the source's ratio); iterations (epochs) 3 for 5 and one iteration of the outer loop
for 10; ``fit_generator`` -> ``fit``; ``SGD(lr=...)`` -> ``learning_rate=``; ``K.sum``, ``K.square``,
``K.maximum`` -> ``keras.ops``; the generator yields ``(a, p, n), y`` for ``[a, p, n], y`` (Keras 3 reads a
generator's nested lists as no structure it can type); ``keras.models.Input`` -> ``keras.Input``; the base model saved as
``epoch_N.keras`` under a temporary folder (Keras 3 wants the suffix), the log there too; config.py's settings
as a class C here, and the ``load_model`` branch for a ``last`` above 0 left out (last is 0); the get_vectors,
centroid and clustering tests of testing.py after each iteration left out (not part of the fit).
"""
# ruff: noqa: B007  (the source's loop, kept as written)

import os
import random
import tempfile

import numpy as np
from keras import Input, ops
from keras.callbacks import CSVLogger
from keras.layers import Concatenate, Conv2D, Dense, GlobalAveragePooling2D
from keras.models import Model
from keras.optimizers import SGD
from PIL import Image

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "plankton_siamese")
OUT = tempfile.mkdtemp(prefix="plankton_siamese-")


# ----------------------------------------------------------------------------- config.py
class C:
    train_dir = os.path.join(DATA, "data", "train")
    val_dir = os.path.join(DATA, "data", "validate")
    test_dir = os.path.join(DATA, "data", "test")

    batch_size = 20
    logfile = os.path.join(OUT, "train.log")

    last = 0
    learn_rate = 0.01
    lr_decay = 0.9
    iterations = 3


# ----------------------------------------------------------------------------- generators.py
def mk_triplets(directory):

    classes = os.listdir(directory)
    images = [os.listdir(os.path.join(directory, x)) for x in classes]

    while True:
        # pick random positive class
        pos_class = random.randint(0, len(classes)-1)

        # pick random, different negative class
        neg_class = random.randint(0, len(classes)-2)
        if neg_class >= pos_class:
            neg_class = neg_class + 1

        # pick two random images from class
        anchor = os.path.join(directory, classes[pos_class], random.choice(images[pos_class]))
        pos = os.path.join(directory, classes[pos_class], random.choice(images[pos_class]))
        neg = os.path.join(directory, classes[neg_class], random.choice(images[neg_class]))

        yield (pos_class, neg_class, anchor, pos, neg)


# Scale to image size, paste on white background
def paste(img):
    i = np.ones((96, 96, 3))
    # NB: Mono images lack the third dimension and will fail here:
    (x, y) = img.shape
    start_x = int((96-x)/2)
    end_x = start_x + x
    start_y = int((96-y)/2)
    end_y = start_y + y
    i[start_x:end_x, start_y:end_y, 0] = img
    return i


pasted = {}


def triplet_generator(batch_size, cache_size, directory):
    trips = mk_triplets(directory)
    while True:
        ys = []
        ans = []
        pss = []
        ngs = []
        for i in range(0, batch_size):
            pc, nc, anc, pos, neg = next(trips)
            ys.append((pc, nc))
            for f in (anc, pos, neg):  # the fix: each file opened, scaled and pasted once
                if f not in pasted:
                    pasted[f] = paste(np.array(Image.open(f))/256)
            ans.append(pasted[anc])
            pss.append(pasted[pos])
            ngs.append(pasted[neg])

        a = np.asarray(ans)
        p = np.asarray(pss)
        n = np.asarray(ngs)
        y = np.asarray(ys)

        yield (a, p, n), y


# Testing:
print("### Testing triplet_generator ###")
g = triplet_generator(4, None, C.train_dir)
for x in range(0, 4):
    [a, p, n], y = next(g)
    print(x, "a:", a.shape, "p:", p.shape, "n:", n.shape, "y:", y.shape)


# ----------------------------------------------------------------------------- create_model.py
in_dim = (96, 96, 3)
out_dim = 64


def create_base_network(input_dim):
    inputs = Input(input_dim)  # a small CNN for InceptionV3(weights='imagenet', include_top=False)
    x = Conv2D(16, 3, strides=2, activation="relu")(inputs)
    x = Conv2D(32, 3, strides=2, activation="relu")(x)
    x = Conv2D(64, 3, strides=2, activation="relu")(x)
    base_model = Model(inputs, x)

    # Add a new 128-bit output vector
    tmp = GlobalAveragePooling2D()(base_model.output)
    bitvector = Dense(out_dim, activation="sigmoid")(tmp)
    return Model(inputs=base_model.input, outputs=bitvector)


def tripletize(bmodel):
    anc_in = Input(shape=in_dim)
    pos_in = Input(shape=in_dim)
    neg_in = Input(shape=in_dim)

    anc_out = bmodel(anc_in)
    pos_out = bmodel(pos_in)
    neg_out = bmodel(neg_in)

    out_vector = Concatenate()([anc_out, pos_out, neg_out])
    return Model(inputs=[anc_in, pos_in, neg_in], outputs=out_vector)


# Basic triplet loss.
# Note, due to the K.maximum, this learns nothing when dneg>dpos+alpha
def std_triplet_loss(alpha=5):
    # split the prediction vector
    def myloss(y_true, y_pred):
        anchor = y_pred[:, 0:out_dim]
        pos = y_pred[:, out_dim:out_dim*2]
        neg = y_pred[:, out_dim*2:out_dim*3]
        pos_dist = ops.sum(ops.square(anchor-pos), axis=1)
        neg_dist = ops.sum(ops.square(anchor-neg), axis=1)
        basic_loss = pos_dist - neg_dist + alpha
        loss = ops.maximum(basic_loss, 0.0)
        return loss

    return myloss


# ----------------------------------------------------------------------------- train.py
last = C.last


def save_name(i):
    return os.path.join(OUT, "models", "epoch_"+str(i)+".keras")


def log(s):
    with open(C.logfile, "a") as f:
        print(s, file=f)


# Use log to file
logger = CSVLogger(C.logfile, append=True, separator="\t")


def train_step():
    model.fit(
        triplet_generator(C.batch_size, None, C.train_dir), steps_per_epoch=30, epochs=C.iterations,
        callbacks=[logger],
        validation_data=triplet_generator(C.batch_size, None, C.val_dir), validation_steps=3)


if last == 0:
    log("Creating base network from scratch.")
    if not os.path.exists(os.path.join(OUT, "models")):
        os.makedirs(os.path.join(OUT, "models"))
    base_model = create_base_network(in_dim)

model = tripletize(base_model)
model.compile(optimizer=SGD(learning_rate=C.learn_rate, momentum=0.9),
              loss=std_triplet_loss())

for i in range(last+1, last+2):
    log("Starting iteration "+str(i)+"/"+str(last+10)+" lr="+str(C.learn_rate))
    train_step()
    C.learn_rate = C.learn_rate * C.lr_decay
    base_model.save(save_name(i))
