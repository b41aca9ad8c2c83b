"""Multi-label movie-genre classification from posters, training: src/model.py of movie-genre-detection, a four-
convolution CNN with 25 sigmoid outputs fitted on ``BatchSequence``, a keras.utils.Sequence over the rows of a pandas
DataFrame read from train.csv, whose ``__getitem__`` opens, decodes and resizes every poster JPEG of the batch (named by
the rows' Id column) with keras's load_img, every batch of every epoch; the test posters are read once, before the
fit, into an array.

Source: https://github.com/hieudo-dev/movie-genre-detection at 4a3ab2a9c60856ee8202747bc4aa16d0b6dc7735
(src/model.py). Re-written here in the source's structure and order, not copied: ``pd.read_csv(
'src/Movies_Poster/Multi_Label_dataset/train.csv')`` (the Kaggle movie-poster set: Id, Genre and one 0/1 column for
each of 25 genres); ``y = np.array(train.drop(['Id', 'Genre'], axis=1))``; ``train_test_split(train, y,
random_state=42, test_size=0.1)`` splits the DataFrame and the labels; every test poster read with
``image.load_img(path, target_size=(400,400,3))``, ``img_to_array`` and ``/ 255`` into the X_test array; a
Sequential of Conv2D 16, 32, 64, 64 (5x5, relu, valid), each followed by 2x2 max pooling and Dropout 0.25, Flatten,
Dense 128 relu, Dropout 0.5, Dense 64 relu, Dropout 0.5, Dense 25 sigmoid, compiled with adam, binary cross-entropy
and accuracy; ``BatchSequence(X_train, y_train, 50)``: ``__len__`` ceil(rows / 50), ``__getitem__(idx)`` the rows
``idx * 50 : (idx + 1) * 50`` of the DataFrame, for each Id ``load_img('.../Images/' + name + '.jpg',
target_size=(400,400,3))``, ``img_to_array``, ``/ 255``, stacked, and the same slice of y_train;
``model.fit_generator(batch, epochs=5, validation_data=(X_test, y_test))``; the model saved to dist/model.h5.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/movie_poster_genres/src/Movies_Poster/Multi_Label_dataset/``: 1000
generated 182x268 poster JPEGs and their train.csv rows for the set's 7254); target_size 128x128 for 400x400 (the
test array and the Sequence alike); epochs 3 for 5; sklearn's train_test_split re-written in NumPy as it splits
(RandomState(42).permutation, the first ceil(10%) for the test rows); fit_generator -> fit; ``super().__init__()``
added to BatchSequence (Keras 3's PyDataset wants it); matplotlib and tqdm (imported, unused) not imported; the model
saved under a temporary folder as .keras (dist/model.h5 in the source; loadModel reads it from there).
"""

import os
import tempfile

import keras
import numpy as np
import pandas as pd
from keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from keras.models import Sequential, load_model
from keras.preprocessing import image
from keras.utils import to_categorical  # noqa: F401 (the source's, unused)

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "movie_poster_genres")
DIST = tempfile.mkdtemp(prefix="movie_poster_genres.")


# ----------------------------------------------------------------------------- sklearn.model_selection
def train_test_split(X, y, random_state, test_size):
    n = len(X)
    n_test = int(np.ceil(test_size * n))
    permutation = np.random.RandomState(random_state).permutation(n)
    ind_test, ind_train = permutation[:n_test], permutation[n_test:]
    return X.iloc[ind_train], X.iloc[ind_test], y[ind_train], y[ind_test]


# ----------------------------------------------------------------------------- src/model.py
# In[ ]:


train = pd.read_csv(os.path.join(DATA, 'src/Movies_Poster/Multi_Label_dataset/train.csv'))
train.shape[0]


# In[ ]:


y = np.array(train.drop(['Id', 'Genre'],axis=1))
y.shape  # noqa: B018  (a notebook cell's display, kept)
X_train, X_test, y_train, y_test = train_test_split(train, y, random_state=42, test_size=0.1)

imgs = []
for name in X_test['Id']:
    img = image.load_img(os.path.join(DATA, 'src/Movies_Poster/Multi_Label_dataset/Images/') + name + '.jpg', target_size=(128,128,3))
    img = image.img_to_array(img)
    # print(img.shape)
    img = img / 255
    imgs.append(img)
X_test = np.array(imgs)


# In[ ]:


model = Sequential()
model.add(keras.Input(shape=(128,128,3)))
model.add(Conv2D(filters=16, kernel_size=(5, 5), activation="relu"))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))
model.add(Conv2D(filters=32, kernel_size=(5, 5), activation='relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))
model.add(Conv2D(filters=64, kernel_size=(5, 5), activation="relu"))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))
model.add(Conv2D(filters=64, kernel_size=(5, 5), activation='relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))
model.add(Flatten())
model.add(Dense(128, activation='relu'))
model.add(Dropout(0.5))
model.add(Dense(64, activation='relu'))
model.add(Dropout(0.5))
model.add(Dense(25, activation='sigmoid'))


# In[ ]:


model.compile(optimizer='adam', loss='binary_crossentropy', metrics=['accuracy'])


# In[ ]:
class BatchSequence(keras.utils.Sequence):
    def __init__(self, x_set, y_set, batch_size):
        super().__init__()
        self.x, self.y = x_set, y_set
        self.batch_size = batch_size

    def __len__(self):
        return int(np.ceil(len(self.x) / float(self.batch_size)))

    def __getitem__(self, idx):
        train_image = []
        for name in self.x.iloc[idx * self.batch_size:(idx + 1) * self.batch_size]['Id']:
            img = image.load_img(os.path.join(DATA, 'src/Movies_Poster/Multi_Label_dataset/Images/') + name + '.jpg', target_size=(128,128,3))
            img = image.img_to_array(img)
            img = img / 255
            train_image.append(img)

        batch_x = np.array(train_image)
        batch_y = self.y[idx * self.batch_size:(idx + 1) * self.batch_size]

        return batch_x, batch_y


# In[]:
batch_size = 50
L = len(X_train)
batch = BatchSequence(X_train, y_train, batch_size)
model.fit(batch, epochs=3, validation_data=(X_test, y_test))


path = DIST # Current Path

model.save(os.path.join(path, "model.keras"))
print("Saved model to disk")


# In[]:
# Load Model
def loadModel():
    path = DIST

    model = load_model(os.path.join(path, "model.keras"))

    return model

# %%
