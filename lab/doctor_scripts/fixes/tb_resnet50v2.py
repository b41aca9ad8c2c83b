"""FIXED COPY (the one fix: the frozen ResNet50V2 run once per image, without the random zoom and rotation before it,
its features kept in memory and the head fitted on them; validation and test features taken once, so their split is fixed).

Tuberculosis detection on chest X-rays, training: ResNet50V2/resnet50v2.py (with ResNet50V2/api.py) of
AndryRafam/Tuberculosis, a frozen ResNet50V2 (transfer learning, feature extraction) under a RandomZoom/RandomRotation
augmentation block and ResNet50V2's preprocess_input inside the model, with a GlobalAveragePooling2D, Dropout and Dense
2 head, fitted on tf.keras.preprocessing.image_dataset_from_directory datasets that read, decode and resize every PNG
of a batch each time the batch is asked for, every epoch (prefetch, no cache).

Source: https://github.com/AndryRafam/Tuberculosis at a36d3f4d7c47cfc370a0f8dc29fcd1c3fbd6974d
(ResNet50V2/resnet50v2.py, which imports ResNet50V2/api.py). Re-written here in the source's structure and order, not
copied: resnet50v2.py seeds random, NumPy and TensorFlow with 1337, unzips archive.zip (Kaggle's Tuberculosis (TB)
Chest X-ray Database: TB_Chest_Radiography_Database/Normal/*.png and Tuberculosis/*.png, 3500 and 700 512x512 X-rays),
builds ``tf.keras.preprocessing.image_dataset_from_directory("TB_Chest_Radiography_Database", validation_split=0.2,
subset="training"/"validation", seed=1337, shuffle=True, image_size=(224,224), batch_size=32)``, takes a fifth of the
validation batches as a test set (``val_ds.take(val_batches//5)``, the rest ``val_ds.skip(val_batches//5)``), shows
four training images with matplotlib, and prefetches the three datasets (``prefetch(buffer_size=AUTOTUNE)``); api.py
builds ``data_augmentation = Sequential([RandomZoom(0.2), RandomRotation(0.1)])``, ``rescale =
resnet_v2.preprocess_input``, ``ResNet50V2(input_shape=(224,224,3), include_top=False, weights="imagenet")`` with
``base_model.trainable = False``, and the model of class Transfer_ResNet50V2 (augmentation, preprocess_input, the
base model with training=False, GlobalAveragePooling2D, Dropout(0.2, seed=1337), Dense(2, activation="sigmoid")),
compiled with Adam(), SparseCategoricalCrossentropy() and accuracy; under ``__main__`` resnet50v2.py evaluates the
model on val_ds, fits it with ``model.fit(train_ds, epochs=10, validation_data=val_ds, callbacks=[checkpoint])`` (a
ModelCheckpoint of the best val_loss to tuberculosis.hdf5), loads the best model back and evaluates it on val_ds and
test_ds.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/tb_resnet50v2/TB_Chest_Radiography_Database/``: 600 Normal and 120
Tuberculosis generated 256x256 grayscale PNGs for 3500 and 700 at 512x512), already unpacked, so the unzip of
archive.zip is left out; image_size (64, 64) for (224, 224), the Input and ResNet50V2's input_shape with it;
ResNet50V2 weights=None for "imagenet" (no download here; the frozen layers cost the same either way); epochs 3 for 10;
the matplotlib figure of four training images left out; api.py's code inlined where resnet50v2.py imports it (the
same order: data, then model); RandomZoom/RandomRotation imported from tensorflow.keras.layers as api.py does; the
checkpoint written to tuberculosis.keras in a temporary folder (Keras 3 saves whole models only to .keras or .h5).
"""

import os
import random
import tempfile

import numpy as np
import tensorflow as tf

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "tb_resnet50v2")
OUT = os.path.join(tempfile.gettempdir(), "tb_resnet50v2_out")

random.seed(1337)
np.random.seed(1337)
tf.random.set_seed(1337)


train_ds = tf.keras.preprocessing.image_dataset_from_directory(
	os.path.join(DATA, "TB_Chest_Radiography_Database"),
	validation_split = 0.2,
	subset = "training",
	seed = 1337,
	shuffle = True,
	image_size = (64,64),
	batch_size = 32,
)

val_ds = tf.keras.preprocessing.image_dataset_from_directory(
	os.path.join(DATA, "TB_Chest_Radiography_Database"),
	validation_split = 0.2,
	subset = "validation",
	seed = 1337,
	shuffle = True,
	image_size = (64,64),
	batch_size = 32,
)

val_batches = tf.data.experimental.cardinality(val_ds)
test_ds = val_ds.take(val_batches//5)
val_ds = val_ds.skip(val_batches//5)

class_names = train_ds.class_names
print(class_names)

AUTOTUNE = tf.data.AUTOTUNE
train_ds = train_ds.prefetch(buffer_size=AUTOTUNE)
val_ds = val_ds.prefetch(buffer_size=AUTOTUNE)
test_ds = test_ds.prefetch(buffer_size=AUTOTUNE)


# ----------------------------------------------------------------------------- api.py
from tensorflow.keras import Sequential
from tensorflow.keras.layers import RandomRotation, RandomZoom

data_augmentation = Sequential([
	RandomZoom(0.2),
	RandomRotation(0.1),
])


from tensorflow.keras import Input, Model
from tensorflow.keras.applications import ResNet50V2, resnet_v2
from tensorflow.keras.layers import Dense, Dropout, GlobalAveragePooling2D
from tensorflow.keras.losses import SparseCategoricalCrossentropy
from tensorflow.keras.optimizers import Adam

rescale = resnet_v2.preprocess_input

base_model = ResNet50V2(input_shape=(64,64,3),include_top=False,weights=None)
base_model.trainable = False
base_model.summary()


# FIX: the frozen backbone once per image (no augmentation before it); its features and labels kept in memory
def features(ds):
	xs, ys = zip(*[(base_model(rescale(x), training=False), y) for x, y in ds])
	return np.concatenate(xs), np.concatenate(ys)
train_x, train_y = features(train_ds)
val_x, val_y = features(val_ds)
test_x, test_y = features(test_ds)

class Transfer_ResNet50V2():
	def model(self,input):
		self.x = GlobalAveragePooling2D()(input)
		self.x = Dropout(0.2,seed=1337)(self.x)
		self.outputs = Dense(2,activation="sigmoid")(self.x)
		self.model = Model(input,self.outputs,name="Transfer_ResNet50V2")
		return self.model

T = Transfer_ResNet50V2()
model = T.model(Input(shape=train_x.shape[1:]))
model.summary()
model.compile(Adam(),SparseCategoricalCrossentropy(),metrics=["accuracy"])


# ----------------------------------------------------------------------------- resnet50v2.py
from tensorflow.keras.callbacks import ModelCheckpoint
from tensorflow.keras.models import load_model

if __name__=="__main__":
	os.makedirs(OUT, exist_ok=True)
	loss0,accuracy0 = model.evaluate(val_x,val_y)
	print("Initial loss: {:.2f} %".format(100*loss0))
	print("Initial accuracy: {:.2f} %".format(100*accuracy0))
	checkpoint = ModelCheckpoint(os.path.join(OUT, "tuberculosis.keras"),save_weights_only=False,monitor="val_loss",save_best_only=True)
	model.fit(train_x,train_y,batch_size=32,shuffle=True,epochs=3,validation_data=(val_x,val_y),callbacks=[checkpoint])
	best = load_model(os.path.join(OUT, "tuberculosis.keras"))
	val_loss,val_accuracy = best.evaluate(val_x,val_y)
	test_loss,test_accuracy = best.evaluate(test_x,test_y)
	print("\nVal accuracy: {:.2f} %".format(100*val_accuracy))
	print("Val loss: {:.2f} %".format(100*val_loss))
	print("\nTest accuracy: {:.2f} %".format(100*test_accuracy))
	print("Test loss : {:.2f} %".format(100*test_loss))
