"""FIXED COPY (the one fix: the generated and the VGG feature batches drawn with predict_on_batch, not predict, which
builds a data adapter, an epoch iterator and a predict function call for every batch; the image reads as before).

Face super-resolution with an SRGAN, training: SRGAN/srgan.py and SRGAN_lib.py of Keras-SRGAN, a custom loop of
``train_on_batch`` calls (the discriminator on a batch of real high-resolution faces, then on the generator's
``predict`` of their low-resolution versions, then the adversarial model on a second batch with VGG19 features of it
from ``vgg.predict`` as targets), each batch drawn by ``sample_images``: a glob of the whole image folder, a random
choice of files, and for each file a read, two resizes (high and low resolution) and a random flip.

Source: https://github.com/aurelio-amerio/Keras-SRGAN at 7f147497a874a623997217f72858fae6a85c72e6
(SRGAN/SRGAN_lib.py; SRGAN/srgan.py at aaa1fab1072c0486c3931b7414080da772c2a719 runs ``SRGAN().train()``; the
repository is a fork of the code of the book "Generative Adversarial Networks Projects", chapter 5, made into a
class). Re-written here in the source's structure and order, not copied: SRGAN.__init__ sets data_dir
"./dataset/img_align_celeba/*.*", epochs 30000 (iterations), batch_size 8, low resolution (64, 64, 3), high
(256, 256, 3) and one Adam(0.0002, 0.5) for all networks; the generator is a 9x9 Conv2D of 64 (relu), 16 residual
blocks (3x3 Conv2D 64, relu, BatchNormalization(momentum=0.8), Conv2D 64, BatchNormalization, Add), a Conv2D 64 with
BatchNormalization added to the first block's output, two UpSampling2D + Conv2D 256 (relu) and a 9x9 Conv2D 3 (tanh);
the discriminator eight 3x3 Conv2D (64, 64, 128, 128, 256, 256, 512, 512; strides 1, 2 in turn; LeakyReLU(0.2),
BatchNormalization from the second), Dense 1024 (LeakyReLU) and Dense 1 sigmoid on each 16x16 position; build_vgg
takes VGG19(weights="imagenet") and its layer 9's output (block3_conv3) as features of a 256x256 input; train
compiles the VGG (trainable False) and the discriminator with mse, builds the adversarial model (low and high
resolution inputs -> the discriminator's probabilities (trainable False) and the VGG features of the generated
image) compiled with ['binary_crossentropy', 'mse'], loss_weights [1e-3, 1]; each iteration: sample_images, scale
to [-1, 1], ``generator.predict``, ``discriminator.train_on_batch`` on real (ones 16x16x1) then generated (zeros),
sample_images again, ``vgg.predict`` of the high-resolution batch, ``adversarial_model.train_on_batch``, losses
to TensorBoard, and every 100 iterations a third sample_images, ``generator.predict_on_batch`` and a matplotlib
figure per image saved into results/; at the end the weights saved; sample_images globs data_dir every call,
``np.random.choice(all_images, size=batch_size)``, and per file scipy.misc ``imread(img, mode='RGB')``,
``.astype(np.float32)``, ``imresize`` to the high and to the low resolution shape, and ``np.fliplr`` of both with
probability 0.5.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/srgan_celeba/dataset/img_align_celeba/*.*``: 320 generated 178x218 JPEGs
for CelebA's 202599); resolutions 64x64 from 16x16 for 256x256 from 64x64 (the real/fake labels 4x4x1 for 16x16x1,
the discriminator's output at a sixteenth of its input as in the source); the generator's and discriminator's
filters an eighth of the source's (generator 8 and 32 for 64 and 256, discriminator 8 to 64 for 64 to 512, Dense
128 for 1024); epochs (iterations) 18 for 30000; VGG19(weights="imagenet") (a download) re-written as its layers to
block3_pool (layer 9 block3_conv3 as in VGG19) with an eighth of the filters (8, 16, 32 for
64, 128, 256) and no weights, and the source's hack ``vgg.outputs = [vgg.layers[9].output]`` on the 224x224
classifier, which Keras 3 does not allow, written as a Model from its input to layer 9's output (block3_conv3 as
before); Keras 2 names
ported to Keras 3 (keras.layers.convolutional -> keras.layers, LeakyReLU(alpha=) -> negative_slope=);
``discriminator.trainable`` set True before the discriminator's two train_on_batch calls and False before the
adversarial model's (Keras 3 reads it when a model's train step is first traced: the source's one
``trainable = False`` before compiling the adversarial model would leave the discriminator with no trainable
weights); the VGG, the discriminator and the adversarial model compiled with an Adam each, the same settings (a
Keras 3 optimizer serves only the variables it was built with); scipy.misc (gone from SciPy) re-written with PIL as
it worked: imread(mode='RGB') -> ``np.array(Image.open(path).convert('RGB'))``, imresize of the float32 image ->
bytescale to uint8 (the min to 0, the max to 255, as scipy's toimage did for float input), PIL bilinear resize to
the shape's (w, h); TensorBoard logging (tf.Summary, TF1) dropped; save_images (matplotlib figures into results/)
dropped, the every-100-iterations sample_images and predict_on_batch kept; the weights saved under the temporary
folder as .weights.h5.
"""

import glob
import os
import tempfile

import numpy as np
from keras import Input
from keras.layers import Activation, Add, BatchNormalization, Conv2D, Dense, LeakyReLU, MaxPooling2D, UpSampling2D
from keras.models import Model
from keras.optimizers import Adam
from PIL import Image

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "srgan_celeba")


# ----------------------------------------------------------------------------- scipy.misc (imread, imresize)
def imread(path, mode='RGB'):
    return np.array(Image.open(path).convert(mode))


def bytescale(data):
    cmin, cmax = data.min(), data.max()
    scale = 255.0 / ((cmax - cmin) or 1)
    return ((data - cmin) * scale + 0.4999).clip(0, 255).astype(np.uint8)


def imresize(arr, size):
    im = Image.fromarray(bytescale(arr) if arr.dtype != np.uint8 else arr)
    return np.array(im.resize((size[1], size[0]), Image.BILINEAR))


# ----------------------------------------------------------------------------- keras.applications.VGG19 (to layer 9)
def VGG19(input_shape):
    """keras.applications.VGG19's layers 0 to 9 (input to block3_conv3), the filters an eighth (8, 16, 32 for 64,
    128, 256), no weights."""
    x = img_input = Input(shape=input_shape)
    for block, (filters, convs) in enumerate(((8, 2), (16, 2), (32, 4)), start=1):
        for i in range(1, convs + 1):
            x = Conv2D(filters, (3, 3), activation="relu", padding="same", name=f"block{block}_conv{i}")(x)
        x = MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    return Model(img_input, x, name="vgg19")


# ----------------------------------------------------------------------------- SRGAN_lib.py
class SRGAN:
    def __init__(self):
        self.data_dir = DATA + "/dataset/img_align_celeba/*.*"
        self.epochs = 18
        self.batch_size = 8

        # Shape of low-resolution and high-resolution images
        self.low_resolution_shape = (16, 16, 3)
        self.high_resolution_shape = (64, 64, 3)

        # Common optimizer for all networks (Keras 3: one each, see the docstring)
        self.common_optimizer = lambda: Adam(0.0002, 0.5)
        return

    def residual_block(self, x):
        """
        Residual block
        """
        filters = [8, 8]
        kernel_size = 3
        strides = 1
        padding = "same"
        momentum = 0.8
        activation = "relu"

        res = Conv2D(filters=filters[0], kernel_size=kernel_size, strides=strides, padding=padding)(x)
        res = Activation(activation=activation)(res)
        res = BatchNormalization(momentum=momentum)(res)

        res = Conv2D(filters=filters[1], kernel_size=kernel_size, strides=strides, padding=padding)(res)
        res = BatchNormalization(momentum=momentum)(res)

        # Add res and x
        res = Add()([res, x])
        return res

    def build_generator(self):
        """
        Create a generator network using the hyperparameter values defined below
        :return:
        """
        residual_blocks = 16
        momentum = 0.8
        input_shape = (16, 16, 3)

        # Input Layer of the generator network
        input_layer = Input(shape=input_shape)

        # Add the pre-residual block
        gen1 = Conv2D(filters=8, kernel_size=9, strides=1, padding='same', activation='relu')(input_layer)

        # Add 16 residual blocks
        res = self.residual_block(gen1)
        for i in range(residual_blocks - 1):  # noqa: B007 (the source's loop)
            res = self.residual_block(res)

        # Add the post-residual block
        gen2 = Conv2D(filters=8, kernel_size=3, strides=1, padding='same')(res)
        gen2 = BatchNormalization(momentum=momentum)(gen2)

        # Take the sum of the output from the pre-residual block(gen1) and the post-residual block(gen2)
        gen3 = Add()([gen2, gen1])

        # Add an upsampling block
        gen4 = UpSampling2D(size=2)(gen3)
        gen4 = Conv2D(filters=32, kernel_size=3, strides=1, padding='same')(gen4)
        gen4 = Activation('relu')(gen4)

        # Add another upsampling block
        gen5 = UpSampling2D(size=2)(gen4)
        gen5 = Conv2D(filters=32, kernel_size=3, strides=1, padding='same')(gen5)
        gen5 = Activation('relu')(gen5)

        # Output convolution layer
        gen6 = Conv2D(filters=3, kernel_size=9, strides=1, padding='same')(gen5)
        output = Activation('tanh')(gen6)

        # Keras model
        model = Model(inputs=[input_layer], outputs=[output], name='generator')
        return model

    def build_discriminator(self):
        """
        Create a discriminator network using the hyperparameter values defined below
        :return:
        """
        leakyrelu_alpha = 0.2
        momentum = 0.8
        input_shape = (64, 64, 3)

        input_layer = Input(shape=input_shape)

        # Add the first convolution block
        dis1 = Conv2D(filters=8, kernel_size=3, strides=1, padding='same')(input_layer)
        dis1 = LeakyReLU(negative_slope=leakyrelu_alpha)(dis1)

        # Add the 2nd convolution block
        dis2 = Conv2D(filters=8, kernel_size=3, strides=2, padding='same')(dis1)
        dis2 = LeakyReLU(negative_slope=leakyrelu_alpha)(dis2)
        dis2 = BatchNormalization(momentum=momentum)(dis2)

        # Add the third convolution block
        dis3 = Conv2D(filters=16, kernel_size=3, strides=1, padding='same')(dis2)
        dis3 = LeakyReLU(negative_slope=leakyrelu_alpha)(dis3)
        dis3 = BatchNormalization(momentum=momentum)(dis3)

        # Add the fourth convolution block
        dis4 = Conv2D(filters=16, kernel_size=3, strides=2, padding='same')(dis3)
        dis4 = LeakyReLU(negative_slope=leakyrelu_alpha)(dis4)
        dis4 = BatchNormalization(momentum=0.8)(dis4)

        # Add the fifth convolution block
        dis5 = Conv2D(32, kernel_size=3, strides=1, padding='same')(dis4)
        dis5 = LeakyReLU(negative_slope=leakyrelu_alpha)(dis5)
        dis5 = BatchNormalization(momentum=momentum)(dis5)

        # Add the sixth convolution block
        dis6 = Conv2D(filters=32, kernel_size=3, strides=2, padding='same')(dis5)
        dis6 = LeakyReLU(negative_slope=leakyrelu_alpha)(dis6)
        dis6 = BatchNormalization(momentum=momentum)(dis6)

        # Add the seventh convolution block
        dis7 = Conv2D(filters=64, kernel_size=3, strides=1, padding='same')(dis6)
        dis7 = LeakyReLU(negative_slope=leakyrelu_alpha)(dis7)
        dis7 = BatchNormalization(momentum=momentum)(dis7)

        # Add the eight convolution block
        dis8 = Conv2D(filters=64, kernel_size=3, strides=2, padding='same')(dis7)
        dis8 = LeakyReLU(negative_slope=leakyrelu_alpha)(dis8)
        dis8 = BatchNormalization(momentum=momentum)(dis8)

        # Add a dense layer
        dis9 = Dense(units=128)(dis8)
        dis9 = LeakyReLU(negative_slope=0.2)(dis9)

        # Last dense layer - for classification
        output = Dense(units=1, activation='sigmoid')(dis9)

        model = Model(inputs=[input_layer], outputs=[output], name='discriminator')
        return model

    def build_vgg(self):
        """
        Build VGG network to extract image features
        """
        input_shape = (64, 64, 3)

        # Load a VGG19 model (its layers to block3_pool, filters / 8, no weights: see the docstring)
        vgg = VGG19(input_shape=input_shape)
        vgg = Model(inputs=vgg.inputs, outputs=vgg.layers[9].output)

        input_layer = Input(shape=input_shape)

        # Extract features
        features = vgg(input_layer)

        # Create a Keras model
        model = Model(inputs=[input_layer], outputs=[features])
        return model

    def sample_images(self, data_dir, batch_size, high_resolution_shape, low_resolution_shape):
        # Make a list of all images inside the data directory
        all_images = glob.glob(data_dir)

        # Choose a random batch of images
        images_batch = np.random.choice(all_images, size=batch_size)

        low_resolution_images = []
        high_resolution_images = []

        for img in images_batch:
            # Get an ndarray of the current image
            img1 = imread(img, mode='RGB')
            img1 = img1.astype(np.float32)

            # Resize the image
            img1_high_resolution = imresize(img1, high_resolution_shape)
            img1_low_resolution = imresize(img1, low_resolution_shape)

            # Do a random horizontal flip
            if np.random.random() < 0.5:
                img1_high_resolution = np.fliplr(img1_high_resolution)
                img1_low_resolution = np.fliplr(img1_low_resolution)

            high_resolution_images.append(img1_high_resolution)
            low_resolution_images.append(img1_low_resolution)

        # Convert the lists to Numpy NDArrays
        return np.array(high_resolution_images), np.array(low_resolution_images)

    def train(self):
        # Build and compile VGG19 network to extract features
        print("building vgg")
        vgg = self.build_vgg()
        vgg.trainable = False
        vgg.compile(loss='mse', optimizer=self.common_optimizer(), metrics=['accuracy'])

        # Build and compile the discriminator network
        print("building discriminator")
        discriminator = self.build_discriminator()
        discriminator.compile(loss='mse', optimizer=self.common_optimizer(), metrics=['accuracy'])

        # Build the generator network
        print("building generator")
        generator = self.build_generator()

        """
        Build and compile the adversarial model
        """

        # Input layers for high-resolution and low-resolution images
        input_high_resolution = Input(shape=self.high_resolution_shape)
        input_low_resolution = Input(shape=self.low_resolution_shape)

        # Generate high-resolution images from low-resolution images
        generated_high_resolution_images = generator(input_low_resolution)

        # Extract feature maps of the generated images
        features = vgg(generated_high_resolution_images)

        # Make the discriminator network as non-trainable
        discriminator.trainable = False

        # Get the probability of generated high-resolution images
        probs = discriminator(generated_high_resolution_images)

        # Create and compile an adversarial model
        print("build adversarial model")
        adversarial_model = Model([input_low_resolution, input_high_resolution], [probs, features])
        adversarial_model.compile(loss=['binary_crossentropy', 'mse'], loss_weights=[1e-3, 1],
                                  optimizer=self.common_optimizer())

        print("start training")
        for epoch in range(self.epochs):
            print("Epoch:{}".format(epoch))

            """
            Train the discriminator network
            """

            # Sample a batch of images
            high_resolution_images, low_resolution_images = self.sample_images(data_dir=self.data_dir,
                                                                               batch_size=self.batch_size,
                                                                               low_resolution_shape=self.low_resolution_shape,
                                                                               high_resolution_shape=self.high_resolution_shape)
            # Normalize images
            high_resolution_images = high_resolution_images / 127.5 - 1.
            low_resolution_images = low_resolution_images / 127.5 - 1.

            # Generate high-resolution images from low-resolution images
            generated_high_resolution_images = generator.predict_on_batch(low_resolution_images)

            # Generate batch of real and fake labels
            real_labels = np.ones((self.batch_size, 4, 4, 1))
            fake_labels = np.zeros((self.batch_size, 4, 4, 1))

            # Train the discriminator network on real and fake images
            discriminator.trainable = True  # Keras 3: see the docstring
            d_loss_real = discriminator.train_on_batch(high_resolution_images, real_labels)
            d_loss_fake = discriminator.train_on_batch(generated_high_resolution_images, fake_labels)

            # Calculate total discriminator loss
            d_loss = 0.5 * np.add(d_loss_real, d_loss_fake)
            print("d_loss:", d_loss)

            """
            Train the generator network
            """

            # Sample a batch of images
            high_resolution_images, low_resolution_images = self.sample_images(data_dir=self.data_dir,
                                                                               batch_size=self.batch_size,
                                                                               low_resolution_shape=self.low_resolution_shape,
                                                                               high_resolution_shape=self.high_resolution_shape)
            # Normalize images
            high_resolution_images = high_resolution_images / 127.5 - 1.
            low_resolution_images = low_resolution_images / 127.5 - 1.

            # Extract feature maps for real high-resolution images
            image_features = vgg.predict_on_batch(high_resolution_images)

            # Train the generator network
            discriminator.trainable = False
            g_loss = adversarial_model.train_on_batch([low_resolution_images, high_resolution_images],
                                                      [real_labels, image_features])

            print("g_loss:", g_loss)

            # Sample images after every 100 epochs (the figures are not saved: see the docstring)
            if epoch % 100 == 0:
                high_resolution_images, low_resolution_images = self.sample_images(data_dir=self.data_dir,
                                                                                   batch_size=self.batch_size,
                                                                                   low_resolution_shape=self.low_resolution_shape,
                                                                                   high_resolution_shape=self.high_resolution_shape)
                # Normalize images
                high_resolution_images = high_resolution_images / 127.5 - 1.
                low_resolution_images = low_resolution_images / 127.5 - 1.

                generated_images = generator.predict_on_batch(low_resolution_images)  # noqa: F841 (the source's, unused)

        # Save models
        generator.save_weights(os.path.join(tempfile.gettempdir(), "srgan_celeba_generator.weights.h5"))
        discriminator.save_weights(os.path.join(tempfile.gettempdir(), "srgan_celeba_discriminator.weights.h5"))


# ----------------------------------------------------------------------------- srgan.py
if __name__ == "__main__":
    srgan = SRGAN()
    srgan.train()
