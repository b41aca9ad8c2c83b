"""FIXED COPY (the one fix: the epoch passed to train_step as a tensor, not a Python int, so the tf.function step is
traced once, not again at every epoch).

pix2pix edges -> shoe photos, training: train.py (with utils.py, dataset.py and model/) of NNDEV1/Edges2Pic, a
U-Net generator and a PatchGAN discriminator trained by a hand-written ``@tf.function`` step with two
``tf.GradientTape``s, batch size 1, over a tf.data JPEG pipeline: ``list_files(PATH + 'train/*.jpg')`` ->
``map(load_image_train, num_parallel_calls=AUTOTUNE)`` (read, decode, split into the edge and photo halves, a
``@tf.function`` random jitter: nearest resize to 286x286, random 256x256 crop, random flip; normalise) ->
``shuffle(400)`` -> ``batch(1)``, no cache and no prefetch; the step is called with the epoch number as a Python int.

Source: https://github.com/NNDEV1/Edges2Pic at 3d12e47ba0d7da6889544afa39633403302f228b (train.py, utils.py,
dataset.py, model/model_utils.py, model/generator.py, model/discriminator.py; the notebook Pix2PixEdges2Pic.ipynb
holds the same code in one namespace). Re-written here in the source's structure and order, not copied: utils.py sets
BUFFER_SIZE 400, BATCH_SIZE 1, IMG_HEIGHT/IMG_WIDTH 256, OUTPUT_CHANNELS 3 and PATH "/content/edges2shoes/" (pix2pix's
edges2shoes, 49825 training pairs of 256x512 JPEGs, edges left and photo right); ``load`` reads and decodes a JPEG,
cuts it at half its width into the source and target images and casts both to float32; ``resize`` resizes both by
NEAREST_NEIGHBOR; ``random_crop`` stacks the two and takes one random [2, 256, 256, 3] crop; ``normalize`` maps to
[-1, 1]; ``random_jitter`` (a ``tf.function``) resizes to 286x286, crops, and flips both left-right when
``tf.random.uniform(()) > 0.5``; ``load_image_train`` is load -> random_jitter -> normalize and ``load_image_test`` is
load -> resize to 256x256 -> normalize. dataset.py builds the training dataset as above and a test dataset
``list_files(PATH + 'train/*.jpg').map(load_image_test).batch(BATCH_SIZE)`` (the training folder, as written).
model_utils.py's ``gendisc_downunit`` is a Sequential of Conv2D(filters, 4, strides 2, same, random-uniform init, no
bias), BatchNormalization (unless apply_batchnorm=False) and LeakyReLU; ``gendisc_upunit`` a Sequential of
Conv2DTranspose(filters, 4, strides 2), BatchNormalization, Dropout(0.5) when apply_dropout (default True) and ReLU.
generator.py's ``Generator`` is the 256x256 U-Net: eight down units (64, 128, 256, 512 x5; the first without
BatchNormalization), seven up units (512 x4, 256, 128, 64; every one with dropout, the default, though only the first
three pass it), each followed by a Concatenate with the mirrored skip, and a last Conv2DTranspose(3, 4, strides 2,
tanh); the module builds one generator at import (and plots it) and defines ``generator_loss`` (the GAN
cross-entropy + LAMBDA 100 x the L1 loss). discriminator.py's ``Discriminator`` concatenates the input and target
images, three down units (64 without BatchNormalization, 128, 256), ZeroPadding2D, Conv2D(512, 4, no bias),
BatchNormalization, LeakyReLU, ZeroPadding2D and Conv2D(1, 4) (a 30x30 patch map), with ``discriminator_loss`` the
BinaryCrossentropy(from_logits=True) of ones on the real and zeros on the generated output. train.py builds a
generator and a discriminator, two Adam(2e-4, beta_1=0.5), a ``tf.train.Checkpoint`` of the four and a summary file
writer; ``train_step(input_image, target, epoch)`` runs the generator and the discriminator on the real and generated
pairs under both tapes, applies both optimizers' gradients and writes the four losses as summaries with
``step=epoch``; ``fit`` runs EPOCHS (1) epochs, each: ``display.clear_output``, ``generate_images`` on
``test_ds.take(1)`` (the generator with training=True and a matplotlib figure), then ``for n, (input_image, target) in
train_ds.enumerate()`` printing a dot per step (a newline every 20) and calling ``train_step(input_image, target,
epoch)``, a checkpoint every 2 epochs and the epoch's time; a last checkpoint after the loop.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/edges2pic_gan/edges2shoes/``: 64 generated 256x512 pairs for 49825, image
size kept); every filter count divided by 8 (down units 8, 16, 32, 64 x5, up units 64 x4, 32, 16, 8 in the generator,
8, 16, 32 and 64 in the discriminator); EPOCHS 3 for 1; the six files inlined in one module in their import order
(utils, dataset, model_utils, discriminator, generator, train; as in the notebook, the generator's ``loss_object``
and ``OUTPUT_CHANNELS`` come from the shared namespace); ``plot_model``, ``display.clear_output`` and the matplotlib
figure left out (``generate_images`` still runs the generator on the test pair); ``tf.summary.scalar`` (TensorBoard's,
not installed here) as ``tf.summary.write`` of the same tensors and steps; the checkpoints and summaries written to a
temporary folder.
"""

import datetime
import os
import tempfile
import time

import tensorflow as tf

OUT = os.path.join(tempfile.gettempdir(), "edges2pic_gan_out")

# ----------------------------------------------------------------------------- utils.py
#Constants
BUFFER_SIZE = 400
BATCH_SIZE = 1
IMG_HEIGHT = 256
IMG_WIDTH = 256
OUTPUT_CHANNELS = 3
PATH = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "edges2pic_gan",
                    "edges2shoes") + "/"


#Util functions
def load(image_file):
    image = tf.io.read_file(image_file)
    image = tf.image.decode_jpeg(image)

    w = tf.shape(image)[1]

    w = w // 2
    src_image = image[:, :w, :]
    tar_image = image[:, w:, :]

    src_image = tf.cast(src_image, tf.float32)
    tar_image = tf.cast(tar_image, tf.float32)

    return src_image, tar_image


def resize(in_img, out_img, height, width):
    src_image = tf.image.resize(in_img, [height, width],
                                method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    tar_image = tf.image.resize(out_img, [height, width],
                                method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)

    return src_image, tar_image


def random_crop(src_image, tar_image):
    stacked_image = tf.stack([src_image, tar_image], axis=0)
    cropped_image = tf.image.random_crop(
        stacked_image, size=[2, IMG_HEIGHT, IMG_WIDTH, 3])

    return cropped_image[0], cropped_image[1]


def normalize(src_image, tar_image):
    src_image = (src_image / 127.5) - 1
    tar_image = (tar_image / 127.5) - 1

    return src_image, tar_image


#TF Helper Functions
@tf.function()
def random_jitter(src_image, tar_image):

    src_image, tar_image = resize(src_image, tar_image, 286, 286)
    src_image, tar_image = random_crop(src_image, tar_image)

    if tf.random.uniform(()) > 0.5:

        src_image = tf.image.flip_left_right(src_image)
        tar_image = tf.image.flip_left_right(tar_image)

    return src_image, tar_image


def load_image_train(image_file):
    src_image, tar_image = load(image_file)
    src_image, tar_image = random_jitter(src_image, tar_image)
    src_image, tar_image = normalize(src_image, tar_image)

    return src_image, tar_image


def load_image_test(image_file):
    src_image, tar_image = load(image_file)
    src_image, tar_image = resize(src_image, tar_image,
                                  IMG_HEIGHT, IMG_WIDTH)
    src_image, tar_image = normalize(src_image, tar_image)

    return src_image, tar_image


# ----------------------------------------------------------------------------- dataset.py
train_dataset = tf.data.Dataset.list_files(PATH+'train/*.jpg')
train_dataset = train_dataset.map(load_image_train, num_parallel_calls=tf.data.experimental.AUTOTUNE)
train_dataset = train_dataset.shuffle(BUFFER_SIZE)
train_dataset = train_dataset.batch(BATCH_SIZE)

test_dataset = tf.data.Dataset.list_files(PATH+'train/*.jpg')
test_dataset = test_dataset.map(load_image_test)
test_dataset = test_dataset.batch(BATCH_SIZE)


# ----------------------------------------------------------------------------- model/model_utils.py
def gendisc_downunit(filters, size, apply_batchnorm=True):
    init = tf.random_uniform_initializer(0., 0.02)

    gen_block = tf.keras.Sequential()
    gen_block.add(tf.keras.layers.Conv2D(filters, size, strides=2, padding='SAME', kernel_initializer=init,
                                         use_bias=False))

    if apply_batchnorm:
        gen_block.add(tf.keras.layers.BatchNormalization())

    gen_block.add(tf.keras.layers.LeakyReLU())

    return gen_block


def gendisc_upunit(filters, size, apply_dropout=True):
    init = tf.random_uniform_initializer(0., 0.02)

    gen_block = tf.keras.Sequential()
    gen_block.add(tf.keras.layers.Conv2DTranspose(filters, size, strides=2, padding="SAME", kernel_initializer=init,
                                                  use_bias=False))
    gen_block.add(tf.keras.layers.BatchNormalization())

    if apply_dropout:
        gen_block.add(tf.keras.layers.Dropout(0.5))

    gen_block.add(tf.keras.layers.ReLU())

    return gen_block


# ----------------------------------------------------------------------------- model/discriminator.py
def Discriminator():
    init = tf.random_uniform_initializer(0., 0.02)

    inp = tf.keras.layers.Input(shape=[256, 256, 3], name='input_image')
    tar = tf.keras.layers.Input(shape=[256, 256, 3], name='target_image')

    x = tf.keras.layers.concatenate([inp, tar])

    down1 = gendisc_downunit(8, 4, False)(x)
    down2 = gendisc_downunit(16, 4)(down1)
    down3 = gendisc_downunit(32, 4)(down2)

    zero_pad1 = tf.keras.layers.ZeroPadding2D()(down3)
    conv = tf.keras.layers.Conv2D(64, 4, strides=1, kernel_initializer=init, use_bias=False)(zero_pad1)

    batch_norm1 = tf.keras.layers.BatchNormalization()(conv)
    leaky_relu = tf.keras.layers.LeakyReLU()(batch_norm1)
    zero_pad2 = tf.keras.layers.ZeroPadding2D()(leaky_relu)
    last = tf.keras.layers.Conv2D(1, 4, strides=1, kernel_initializer=init)(zero_pad2)

    model = tf.keras.Model(inputs=[inp, tar], outputs=last)

    return model


loss_object = tf.keras.losses.BinaryCrossentropy(from_logits=True)


def discriminator_loss(disc_real_output, disc_generated_output):
    real_loss = loss_object(tf.ones_like(disc_real_output), disc_real_output)

    generated_loss = loss_object(tf.zeros_like(disc_generated_output), disc_generated_output)

    total_disc_loss = real_loss + generated_loss

    return total_disc_loss


# ----------------------------------------------------------------------------- model/generator.py
def Generator():
    inputs = tf.keras.layers.Input([256, 256, 3])

    down_stack = [

        gendisc_downunit(8, 4, apply_batchnorm=False),
        gendisc_downunit(16, 4),
        gendisc_downunit(32, 4),
        gendisc_downunit(64, 4),
        gendisc_downunit(64, 4),
        gendisc_downunit(64, 4),
        gendisc_downunit(64, 4),
        gendisc_downunit(64, 4),

    ]

    up_stack = [

        gendisc_upunit(64, 4, apply_dropout=True),
        gendisc_upunit(64, 4, apply_dropout=True),
        gendisc_upunit(64, 4, apply_dropout=True),
        gendisc_upunit(64, 4),
        gendisc_upunit(32, 4),
        gendisc_upunit(16, 4),
        gendisc_upunit(8, 4),

    ]

    init = tf.random_uniform_initializer(0., 0.02)
    last = tf.keras.layers.Conv2DTranspose(OUTPUT_CHANNELS, 4, strides=2, padding="SAME", kernel_initializer=init,
                                           activation='tanh')

    x = inputs

    skips = []

    for downsample in down_stack:
        x = downsample(x)
        skips.append(x)

    skips = reversed(skips[:-1])

    for up, skip in zip(up_stack, skips):
        x = up(x)
        x = tf.keras.layers.Concatenate()([x, skip])

    x = last(x)

    model = tf.keras.Model(inputs=inputs, outputs=x)

    return model


generator = Generator()

LAMBDA = 100


def generator_loss(disc_generated_output, gen_output, target):
    gan_loss = loss_object(tf.ones_like(disc_generated_output), disc_generated_output)

    l1_loss = tf.reduce_mean(tf.abs(target - gen_output))

    total_gen_loss = gan_loss + (LAMBDA * l1_loss)

    return total_gen_loss, gan_loss, l1_loss


# ----------------------------------------------------------------------------- train.py
generator = Generator()
discriminator = Discriminator()

generator_optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)
discriminator_optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)

checkpoint_dir = os.path.join(OUT, 'training_checkpoints')
checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")
checkpoint = tf.train.Checkpoint(generator_optimizer=generator_optimizer,
                                 discriminator_optimizer=discriminator_optimizer,
                                 generator=generator,
                                 discriminator=discriminator)


def generate_images(model, test_input, tar):
    prediction = model(test_input, training=True)
    display_list = [test_input[0], tar[0], prediction[0]]  # noqa: F841 (plotted in the source)


EPOCHS = 3

log_dir = os.path.join(OUT, "logs/")

summary_writer = tf.summary.create_file_writer(
    log_dir + "fit/" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))


@tf.function
def train_step(input_image, target, epoch):
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        gen_output = generator(input_image, training=True)

        disc_real_output = discriminator([input_image, target], training=True)
        disc_generated_output = discriminator([input_image, gen_output], training=True)

        gen_total_loss, gen_gan_loss, gen_l1_loss = generator_loss(disc_generated_output, gen_output, target)
        disc_loss = discriminator_loss(disc_real_output, disc_generated_output)

    generator_gradients = gen_tape.gradient(gen_total_loss,
                                            generator.trainable_variables)
    discriminator_gradients = disc_tape.gradient(disc_loss,
                                                 discriminator.trainable_variables)

    generator_optimizer.apply_gradients(zip(generator_gradients,
                                            generator.trainable_variables))
    discriminator_optimizer.apply_gradients(zip(discriminator_gradients,
                                                discriminator.trainable_variables))

    with summary_writer.as_default():
        tf.summary.write('gen_total_loss', gen_total_loss, step=epoch)
        tf.summary.write('gen_gan_loss', gen_gan_loss, step=epoch)
        tf.summary.write('gen_l1_loss', gen_l1_loss, step=epoch)
        tf.summary.write('disc_loss', disc_loss, step=epoch)


def fit(train_ds, epochs, test_ds):

    for epoch in range(epochs):

        start = time.time()

        for example_input, example_target in test_ds.take(1):
            generate_images(generator, example_input, example_target)
        print("Epoch: ", epoch)

        # Train
        for n, (input_image, target) in train_ds.enumerate():
            print('.', end='')
            if (n+1) % 20 == 0:
                print()
            train_step(input_image, target, tf.constant(epoch, dtype=tf.int64))
        print()

        # saving (checkpoint) the model every 20 epochs
        if (epoch + 1) % 2 == 0:
            checkpoint.save(file_prefix=checkpoint_prefix)

        print('Time taken for epoch {} is {} sec\n'.format(epoch + 1,
                                                           time.time()-start))
    checkpoint.save(file_prefix=checkpoint_prefix)


fit(train_dataset, EPOCHS, test_dataset)
