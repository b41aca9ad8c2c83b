"""Local climate zone classification of Sentinel-2 patches (So2Sat LCZ42), training: train.py of
ChunpingQiu/benchmark-on-So2SatLCZ42-dataset-a-simple-tour, the Sen2LCZ-Net (a multilevel feature-fusion CNN: four
levels of 3x3 convolutions with BatchNormalization, max- and average-pooling concatenated between levels, a softmax
head at every level, the heads averaged) fitted on dataLoader.generator, a Python generator that keeps the HDF5 file
open and, for every batch, reads 32 randomly chosen patches and their labels from it with h5py (a sorted index
list into the 'label' and 'sen2' datasets), for training and for validation, every epoch.

Source: https://github.com/ChunpingQiu/benchmark-on-So2SatLCZ42-dataset-a-simple-tour at
4d28ac48c7b226f79ea792cda6c6a6a58f79c04e (train.py, dataLoader.py, model.py, lr.py). Re-written here in the source's
structure and order, not copied: train.py sets a TF1 session with per_process_gpu_memory_fraction 0.45, the
checkpoint folder ./results/, train_file and validation_file (training.h5 and validation.h5 of the
TIANCHI_FINAL_DATASET), numClasses 17, batchSize 32, trainNumber 352366 and validationNumber 24119 (hard-coded), a
LearningRateScheduler of step decay (lr.step_decay_schedule: 0.002 halved every 5 epochs, the rate printed at each
epoch), model.sen2LCZ_drop(depth=17, dropRate=0.2, fusion=1) (input 32x32x10, dim 16 doubling per level,
(depth - 1) / 4 = 4 convolutions a level, he_normal, BatchNormalization and ReLU, MaxPooling2D and AveragePooling2D
concatenated, Dropout 0.2 after the second and third levels, GlobalAveragePooling2D + Dense 17 softmax after the
first three levels' pooling and after the fourth level, Average of the four; the builder prints as it goes),
compiles it with Nadam, categorical cross-entropy and accuracy, and calls ``model.fit_generator(generator(train_file,
batchSize=32, num=trainNumber), steps_per_epoch=trainNumber // batchSize, validation_data=generator(validation_file,
num=validationNumber, batchSize=batchSize), validation_steps=validationNumber // batchSize, epochs=100,
max_queue_size=100, callbacks=[EarlyStopping(val_loss, patience 40), ModelCheckpoint(best weights on val_acc),
lr_sched])``. dataLoader.generator opens the file with h5py.File(h5path, "r"), and loops forever: shuffles the
indices 0..num-1, and for each slice of batchSize sorts it and yields db["sen2"][batch_indices,:,:,:] and
db["label"][batch_indices,:] (float64).

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/so2sat_lcz/training.h5`` and ``validation.h5``: 320 and 64 generated
patches, 'sen2' and 'label' only, for 352366 and 24119 with 'sen1' too); trainNumber 320 and validationNumber 64 for
352366 and 24119; epochs 3 for 100; Keras 2 -> Keras 3: the TF1 session block dropped, fit_generator -> fit without
max_queue_size (Keras 3's fit has none), ModelCheckpoint's monitor 'val_acc' -> 'val_accuracy', period=1 dropped
(save_freq='epoch' is the default) and its weights file named .weights.h5 (Keras 3 requires it) in a temporary
folder for ./results/; ``from keras.layers import *`` as explicit imports and numpy imported in model.py's part; the
unused resnet import (its model commented out in train.py) left out.
"""

import os
import tempfile

import h5py
import numpy as np
from keras.callbacks import EarlyStopping, LearningRateScheduler, ModelCheckpoint
from keras.layers import (
    Activation,
    Average,
    AveragePooling2D,
    BatchNormalization,
    Concatenate,
    Conv2D,
    Dense,
    Dropout,
    GlobalAveragePooling2D,
    Input,
    MaxPooling2D,
)
from keras.models import Model
from keras.optimizers import Nadam

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "so2sat_lcz")
OUT = os.path.join(tempfile.gettempdir(), "so2sat_lcz_out")


# ----------------------------------------------------------------------------- dataLoader.py
def generator(h5path, batchSize=32, num=None):

    db = h5py.File(h5path, "r")

    indices=np.arange(num)

    while True:

        np.random.shuffle(indices)
        for i in range(0, len(indices), batchSize):

            batch_indices = indices[i:i+batchSize]
            batch_indices.sort()

            by = db["label"][batch_indices,:]
            bx = db["sen2"][batch_indices,:,:,:]

            yield (bx,by)


# ----------------------------------------------------------------------------- lr.py
def step_decay_schedule(initial_lr=1e-3, decay_factor=0.75, step_size=2):
    '''
    Wrapper function to create a LearningRateScheduler with step decay schedule.
    '''
    def schedule(epoch):
        print(initial_lr * (decay_factor ** np.floor(epoch/step_size)))
        return initial_lr * (decay_factor ** np.floor(epoch/step_size))

    return LearningRateScheduler(schedule)


# ----------------------------------------------------------------------------- model.py
def sen2LCZ_drop_core(inputs, num_classes=17, bn=1, depth=5, dim=16, dropRate=0.1, fusion=0):

    # Start model definition.
    inc_rate = 2

    lay_per_block=int((depth-1)/4)

    '32*32'
    conv0 = Conv2D(dim, (3, 3), padding='same', kernel_initializer = 'he_normal')(inputs)

    if bn==1:
        print('with BN')
        conv0 = BatchNormalization(axis=-1)(conv0)
    conv0 = Activation('relu')(conv0)

    for i in np.arange(lay_per_block-1):
        print(str(i) +'in' +str(lay_per_block-1), '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!')
        conv0 = Conv2D(dim, (3, 3), padding='same', kernel_initializer = 'he_normal')(conv0)
        if bn==1:
            print('with BN')
            conv0 = BatchNormalization(axis=-1)(conv0)
        conv0 = Activation('relu')(conv0)

    "how to pooling?!"
    #############################################
    # merge0 = MaxPooling2D((2, 2))(conv0)

    "original idea"
    pool0 = MaxPooling2D((2, 2))(conv0)
    pool1 = AveragePooling2D(pool_size=2)(conv0)
    merge0 = Concatenate()([pool0,pool1])
    #############################################

    if fusion==1:
        'prediction'
        x = GlobalAveragePooling2D()(merge0)#Flatten
        print(x.shape)
        outputs_32 = Dense(num_classes,
                        activation='softmax',
                        kernel_initializer='he_normal')(x)

    '16*16'
    dim=dim*inc_rate
    conv1 = Conv2D(dim, (3, 3), padding='same', kernel_initializer = 'he_normal')(merge0)
    if bn==1:
        print('with BN')
        conv1 = BatchNormalization(axis=-1)(conv1)
    conv1 = Activation('relu')(conv1)

    for i in np.arange(lay_per_block-1):
        print(str(i) +'in' +str(lay_per_block-1), '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!')
        conv1 = Conv2D(dim, (3, 3), padding='same', kernel_initializer = 'he_normal')(conv1)
        if bn==1:
            print('with BN')
            conv1 = BatchNormalization(axis=-1)(conv1)
        conv1 = Activation('relu')(conv1)

    "how to pooling?!"
    #############################################
    # merge1 = MaxPooling2D((2, 2))(conv1)

    "original idea"
    pool0 = MaxPooling2D((2, 2))(conv1)
    pool1 = AveragePooling2D(pool_size=2)(conv1)
    merge1 = Concatenate()([pool0,pool1])
    #############################################
    'dropOut'
    merge1 = Dropout(dropRate)(merge1)



    if fusion==1:
        'prediction'
        x = GlobalAveragePooling2D()(merge1)#Flatten
        print(x.shape)
        outputs_16 = Dense(num_classes,
                        activation='softmax',
                        kernel_initializer='he_normal')(x)

    '8*8'
    dim=dim*inc_rate
    conv2 = Conv2D(dim, (3, 3), padding='same', kernel_initializer = 'he_normal')(merge1)
    if bn==1:
        print('with BN')
        conv2 = BatchNormalization(axis=-1)(conv2)
    conv2 = Activation('relu')(conv2)

    for i in np.arange(lay_per_block-1):
        print(str(i) +'in' +str(lay_per_block-1), '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!')
        conv2 = Conv2D(dim, (3, 3), padding='same', kernel_initializer = 'he_normal')(conv2)
        if bn==1:
            print('with BN')
            conv2 = BatchNormalization(axis=-1)(conv2)
        conv2 = Activation('relu')(conv2)


    "how to pooling?!"
    #############################################
    # merge2 = MaxPooling2D((2, 2))(conv2)

    "original idea"
    pool0 = MaxPooling2D((2, 2))(conv2)
    pool1 = AveragePooling2D(pool_size=2)(conv2)
    merge2 = Concatenate()([pool0,pool1])
    #############################################

    'dropOut'
    merge2 = Dropout(dropRate)(merge2)

    if fusion==1:
        'prediction'
        x = GlobalAveragePooling2D()(merge2)#Flatten
        print(x.shape)
        outputs_8 = Dense(num_classes,
                        activation='softmax',
                        kernel_initializer='he_normal')(x)

    '4*4'
    dim=dim*inc_rate
    conv3 = Conv2D(dim, (3, 3), padding='same', kernel_initializer = 'he_normal')(merge2)
    if bn==1:
        print('with BN')
        conv3 = BatchNormalization(axis=-1)(conv3)
    conv3 = Activation('relu')(conv3)

    for i in np.arange(lay_per_block-1):
        print(str(i) +'in' +str(lay_per_block-1), '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!')
        conv3 = Conv2D(dim, (3, 3), padding='same', kernel_initializer = 'he_normal')(conv3)
        if bn==1:
            print('with BN')
            conv3 = BatchNormalization(axis=-1)(conv3)
        conv3 = Activation('relu')(conv3)

    'prediction'
    x = GlobalAveragePooling2D()(conv3)#Flatten
    print(x.shape)
    outputs = Dense(num_classes,
                    activation='softmax',
                    kernel_initializer='he_normal')(x)

    if fusion==1:
        'final prediction'
        # x = GlobalAveragePooling2D()(merge2)#Flatten
        # print(x.shape)
        # outputs_8 = Dense(num_classes,
        #                 activation='softmax',
        #                 kernel_initializer='he_normal')(x)
        o=outputs=Average()([outputs, outputs_32, outputs_16, outputs_8])
    else:
        o=outputs

    return o

def sen2LCZ_drop(input_shape=(32,32,10), num_classes=17, bn=1, depth=5, dim=16, dropRate=0.1, fusion=0):
    """

    # Arguments

    # Returns
        model (Model): Keras model instance
    """

    inputs = Input(shape=input_shape)
    o=sen2LCZ_drop_core(inputs, num_classes=num_classes, bn=bn, depth=depth, dim=dim, dropRate=dropRate, fusion=fusion)

    return Model(inputs=inputs, outputs=o)


# ----------------------------------------------------------------------------- train.py
###################################################
'path to save models from check points:'
file0=OUT + '/'

'path to data, needs to be set accordingly'
train_file=os.path.join(DATA, 'training.h5')
validation_file=os.path.join(DATA, 'validation.h5')

numClasses=17
batchSize=32
###################################################

'number of all samples in training and validation sets'
trainNumber=320
validationNumber=64
lr_sched = step_decay_schedule(initial_lr=0.002, decay_factor=0.5, step_size=5)

###################################################
# patch_shape=(32,32,10)
# model = resnet.resnet_v2(input_shape=patch_shape, depth=11, num_classes=numClasses)
model = sen2LCZ_drop(depth=17, dropRate=0.2, fusion=1)

model.compile(optimizer = Nadam(), loss = 'categorical_crossentropy', metrics=['accuracy'])

os.makedirs(OUT, exist_ok=True)
early_stopping = EarlyStopping(monitor = 'val_loss', patience = 40)
modelbest = file0 + "_" + str(batchSize) +"_best.weights.h5"
checkpoint = ModelCheckpoint(modelbest, monitor='val_accuracy', verbose=1, save_best_only=True, save_weights_only=True, mode='auto')

model.fit(generator(train_file, batchSize=batchSize, num=trainNumber),
                steps_per_epoch = trainNumber//batchSize,
                validation_data= generator(validation_file, num=validationNumber, batchSize=batchSize),
                validation_steps = validationNumber//batchSize,
                epochs=3,
                callbacks=[early_stopping, checkpoint, lr_sched])
