"""CAPTCHA character detection (a YOLO-style grid detector), training: train.py (with model.py) of
aiguy110/captcha-breaker, a subclassed residual CNN (CaptchaBreaker) fitted on tf.data.Dataset.from_generator over
a Python generator that, for every example of every epoch, reads the CAPTCHA PNG with cv2, normalises each colour
channel by its maximum, reads the example's JSON list of character rects and builds its (7, 20, 70) grid target in
nested Python loops (for each of the 140 cells: the cell's prior rect decoded with NumPy, its overlap with each
character rect, and the encoded box for a matching cell), then ``.batch(10)`` with no cache or prefetch, the same for
the validation split.

Source: https://github.com/aiguy110/captcha-breaker at d9bc4889f9b5b3c5c20daa332c6763d8a429844d (train.py, model.py).
Re-written here in the source's structure and order, not copied: train.py takes data_dir from sys.argv[1] (a flat
folder of <text>.png 160x60 CAPTCHAs, each with <text>.json: a list of {left, right, top, bottom, label} rects),
``make_train_and_test_datasets(data_dir)`` lists the PNGs, shuffles them, splits 80/20, and wraps
``load_dataset(sample_paths)`` (bytes decoded back to str, the output grid from pooling [2, 2, 2], the paths shuffled
with random.shuffle, then per example ``CaptchaBreaker.load_and_preprocess_image`` and the target loops with
detect_thres 0.6 / no_detect_thres 0.4, class one-hot, objectness, encode_rect and the three loss masks) in
``tf.data.Dataset.from_generator(load_dataset, args=[paths], output_types=(tf.float32, tf.float32),
output_shapes=get_dataset_dims_from_generator(...))`` for each split (the dims taken by running the generator for its
first example), writes train_image_paths.txt and test_image_paths.txt, then under __main__ builds SGD(learning_rate
1e-4, momentum 0), CaptchaBreaker() compiled with its yolo_loss (softmax cross-entropy of the 62 classes, sigmoid
cross-entropy of objectness and squared box error, each masked by the target's channels 67-69, with
tf.debugging.check_numerics), and calls ``model.fit(train_dataset.batch(10), epochs=5,
validation_data=test_dataset.batch(10))`` inside a try whose except saves the model and searches the training set
for a NaN/inf output; then saves the model. model.py: ResBlock (Conv2D 1x1 -> LeakyReLU -> Conv2D 3x3, added to the
input, LeakyReLU) and CaptchaBreaker (Conv2D 96 5x5, 5 ResBlocks 48/96, Conv2D 192, max-pool, 5 ResBlocks 96/192,
Conv2D 384, max-pool, 10 ResBlocks 192/384, Conv2D 1024, max-pool, Conv2D 512 1x1, Conv2D 67 3x3, LeakyReLU(0.1)
after each convolution; its call also sums each layer's memory and prints it when training), with the static box
helpers the generator uses.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/captcha_yolo/``: 200 generated 160x60 CAPTCHAs for the author's set) for
sys.argv[1] and its usage check; epochs 3 for 5; the CNN's filters an eighth of the source's (12, 6/12, 24, 12/24, 48,
24/48, 128, 64 for 96, 48/96, 192, 96/192, 384, 192/384, 1024, 512; the 67 outputs kept); train/test_image_paths.txt,
the saved models and the NaN search's .npy files written to a temporary folder (the models as .keras: Keras 3 saves
whole models only to .keras or .h5); Keras 2 -> 3: ResBlock's ``super().__init__(self)`` without the stray positional
self (Keras 3's Layer takes no positional arguments), and the memory sum's ``tf_var.dtype.size`` through
tf.as_dtype (a Keras 3 variable's dtype is a string); model.py's inference-only helpers after
load_and_preprocess_image (mix_rects, parse_model_output) left out; model.py's code inlined above train.py's.
"""

import json
import math
import os
import random
import string
import sys  # noqa: F401
import tempfile

import cv2
import numpy as np
import tensorflow as tf

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "captcha_yolo")
OUT = os.path.join(tempfile.gettempdir(), "captcha_yolo_out")
os.makedirs(OUT, exist_ok=True)


# ----------------------------------------------------------------------------- model.py (filters / 8)

class ResBlock(tf.keras.Model): # [x] Conv2d-1x1-n1 -> Conv2d-3x3-n2 + x 
    def __init__(self, n1, n2):
        super(ResBlock, self).__init__()
        self.sub_layers = [
            tf.keras.layers.Conv2D(n1, (1,1), padding='same'),
            tf.keras.layers.LeakyReLU(alpha=0.1),
            tf.keras.layers.Conv2D(n2, (3,3), padding='same'),
        ]
        self.final_activation = tf.keras.layers.LeakyReLU(alpha=0.1)
    
    def call(self, input_tensor):
        x = input_tensor
        for layer in self.sub_layers:
            x = layer(x)
        return self.final_activation( tf.keras.layers.Add()([x, input_tensor]) ) 

class CaptchaBreaker(tf.keras.Model):
    scale_prior = 24
    label_ind_lookup = string.ascii_lowercase + string.ascii_uppercase + string.digits

    def __init__(self):
        super(CaptchaBreaker, self).__init__()
        self.backbone_layers = [] 
        self.backbone_layers.append( tf.keras.layers.Conv2D(64*3//2//8, (5,5), padding='same') )
        self.backbone_layers.append( tf.keras.layers.LeakyReLU(alpha=0.1) )
        
        for i in range(5):  # noqa: B007
            self.backbone_layers.append( ResBlock(32*3//2//8, 64*3//2//8) )
        self.backbone_layers.append( tf.keras.layers.Conv2D(128*3//2//8, (3,3), padding='same') )
        self.backbone_layers.append( tf.keras.layers.LeakyReLU(alpha=0.1) )
        self.backbone_layers.append( tf.keras.layers.MaxPool2D((2,2)) )
        
        for i in range(5):  # noqa: B007
            self.backbone_layers.append( ResBlock(64*3//2//8, 128*3//2//8) )
        self.backbone_layers.append( tf.keras.layers.Conv2D(256*3//2//8, (3,3), padding='same') )
        self.backbone_layers.append( tf.keras.layers.LeakyReLU(alpha=0.1) )
        self.backbone_layers.append( tf.keras.layers.MaxPool2D((2,2)) )
        
        for i in range(10):  # noqa: B007
            self.backbone_layers.append( ResBlock(128*3//2//8, 256*3//2//8) )
        self.backbone_layers.append( tf.keras.layers.Conv2D(1024//8, (3,3), padding='same') )
        self.backbone_layers.append( tf.keras.layers.LeakyReLU(alpha=0.1) )
        self.backbone_layers.append( tf.keras.layers.MaxPool2D((2,2)) )

        self.backbone_layers.append( tf.keras.layers.Conv2D(512//8, (1,1), padding='same') )
        self.backbone_layers.append( tf.keras.layers.LeakyReLU(alpha=0.1) )
        self.backbone_layers.append( tf.keras.layers.Conv2D(67, (3,3), padding='same') )

    def call(self, inputs, training=False):
        # Build model, and print memory usage info
        model_bytes = 0
        per_sample_bytes = 0
        x = inputs
        for layer in self.backbone_layers:
            x = layer(x)
            # Compute per-sample memory requirements to store this layers outputs
            elements = 1
            for dim in x.shape[1:]:
                elements *= dim
            per_sample_bytes += elements * x.dtype.size

            # Compute parameter memory requirements of this layer
            for tf_var in layer.weights:
                elements = 1
                for dim in tf_var.shape:
                    elements *= dim
                model_bytes += elements * tf.as_dtype(tf_var.dtype).size
        if training:
            print(f'Model parameters require {model_bytes} bytes of memory. An additional {per_sample_bytes} bytes is required')
            print(f'for each sample in a batch (not including the input and target tensors themselves).')  # noqa: F541
        
        if False:#not training:
            class_slice      = x[:,:,:,  :62] # 26*2 letters + 10 digits
            objectness_slice = x[:,:,:,62:63] # objectness
            box_offset_slice = x[:,:,:,63:65] # (x, y) detection box offset factors from center of cell 
            box_scale_slice  = x[:,:,:,65:67] # (w, h) detection box scale factors

            class_activations      = tf.keras.activations.softmax( class_slice )
            objectness_activations = tf.keras.activations.sigmoid( objectness_slice )
            box_offset_factors     = box_offset_slice#activations.sigmoid( box_offset_slice )
            box_scale_factors      = box_scale_slice#activations.exponential( box_scale_slice )

            return tf.keras.layers.Concatenate(axis=-1)( [class_activations, objectness_activations, box_offset_factors, box_scale_factors] )
        else:
            return x
        

    @staticmethod
    def decode_rect(arr, cell_offset, cell_size, scale_prior=None):
        if scale_prior == None:
            scale_prior = CaptchaBreaker.scale_prior

        cell_center_offset = (cell_offset[:2] + np.array([0.5, 0.5])) * cell_size
        half_prior_offset = np.array([0.5, 0.5]) * scale_prior
        
        def sigma(x):
            return 1 / ( 1 + np.exp(-x) )
        
        output_offsets = sigma(arr[:2]) * scale_prior
        full_offset = cell_center_offset - half_prior_offset + output_offsets 
        
        w, h = np.exp(arr[2:]) * scale_prior
        return { 'left': full_offset[0] - w/2, 'right': full_offset[0] + w/2, 'top': full_offset[1] - h/2, 'bottom': full_offset[1] + h/2 }
    
    @staticmethod
    def encode_rect(rect, cell_offset, cell_size, scale_prior=None):
        if scale_prior == None:
            scale_prior = CaptchaBreaker.scale_prior
        
        rect_width  = rect['right' ] - rect['left']
        rect_height = rect['bottom'] - rect['top' ]
        scale_pre_activations = np.log( np.array([rect_width, rect_height]) / scale_prior )

        prior_upper_left_offset = (cell_offset[:2] + np.array([0.5, 0.5]))*cell_size - np.array([0.5, 0.5]) * scale_prior
        normalized_offset = ( CaptchaBreaker.rect_center( rect ) - prior_upper_left_offset) / scale_prior
        
        epsilon = 0.001
        normalized_offset = np.maximum( normalized_offset, [  epsilon,   epsilon] )
        normalized_offset = np.minimum( normalized_offset, [1-epsilon, 1-epsilon] )

        offset_pre_activations = - np.log( (1-normalized_offset) / normalized_offset )

        return np.concatenate( (offset_pre_activations, scale_pre_activations) )

    @staticmethod
    def rect_center(rect):
        return np.array( [(rect['left']+rect['right'])/2, (rect['top']+rect['bottom'])/2] )

    @staticmethod
    def point_is_inside_rect(point, rect):
        x, y = point
        if rect['left'] < x < rect['right'] and rect['top'] < y < rect['bottom']:
            return True
        else:
            return False
    
    @staticmethod
    def rect_area(rect):
        return max(rect['right'] - rect['left'], 0) * max(rect['bottom'] - rect['top'], 0)

    @staticmethod
    def intersect_rect(rect1, rect2):
        # Note that this will always return a rect even if the input rects do not intersect.
        # In that case, the rect may be inverted left-to-right or top-to-bottom. rect_area()
        # knows to handle this situation by returning zero.
        return {
            'left'  : max( rect1['left']  , rect2['left']   ),
            'right' : min( rect1['right'] , rect2['right']  ),
            'top'   : max( rect1['top']   , rect2['top']    ),
            'bottom': min( rect1['bottom'], rect2['bottom'] )
        }

    @staticmethod
    def intersection_over_union(rect1, rect2):        
        area1 = CaptchaBreaker.rect_area( rect1 )
        area2 = CaptchaBreaker.rect_area( rect2 )
        areax = CaptchaBreaker.rect_area( CaptchaBreaker.intersect_rect(rect1, rect2) )

        return areax / (area1 + area2 - areax)
    
    @staticmethod
    def overlap_fraction(src_rect, dst_rect):
        src_area = CaptchaBreaker.rect_area( src_rect )
        int_area = CaptchaBreaker.rect_area( CaptchaBreaker.intersect_rect(src_rect, dst_rect) )
        
        return int_area / src_area

    @staticmethod
    def yolo_loss(Y_true, Y_pred):
        tf.debugging.check_numerics(Y_true, "Label tensor contained non-numerics")
        tf.debugging.check_numerics(Y_pred, "Prediction tensor contained non-numerics")

        classifier_activations_true = Y_true[:, :, :, :62]
        classifier_logits_pred      = Y_pred[:, :, :, :62]
        classifier_loss_pre_wieghting = tf.nn.softmax_cross_entropy_with_logits(classifier_activations_true, classifier_logits_pred)
        classifier_loss_final = tf.math.reduce_sum( tf.math.multiply(classifier_loss_pre_wieghting, Y_true[:, :, :, 67]), axis=[1,2] )
        tf.debugging.check_numerics(classifier_loss_pre_wieghting, "Class softmax cross entropy output contained non-numerics")

        objectness_activations_true = Y_true[:, :, :, 62]
        objectness_logits_pred      = Y_pred[:, :, :, 62]
        objectness_loss_pre_wieghting = tf.nn.sigmoid_cross_entropy_with_logits(objectness_activations_true, objectness_logits_pred)
        objectness_loss_final = tf.math.reduce_sum( tf.math.multiply(objectness_loss_pre_wieghting, Y_true[:, :, :, 68]), axis=[1,2] )
        tf.debugging.check_numerics(objectness_loss_pre_wieghting, "Objectness sigmoid cross entropy output contained non-numerics")

        bounding_box_pre_activations_true = Y_true[:, :, :, 63:67]
        bounding_box_pre_activations_pred = Y_pred[:, :, :, 63:67]
        bounding_box_sum_square_diffs = tf.math.reduce_sum( tf.math.square( bounding_box_pre_activations_true - bounding_box_pre_activations_pred ), axis=-1 )
        bounding_box_loss_final = tf.math.reduce_sum( tf.math.multiply(bounding_box_sum_square_diffs, Y_true[:, :, :, 69]), axis=[1,2] )
        tf.debugging.check_numerics(bounding_box_sum_square_diffs, "Bounding box sum of square differences output contained non-numerics")

        return classifier_loss_final + objectness_loss_final + bounding_box_loss_final
    
    @staticmethod
    def load_and_preprocess_image(image_path):
        im = cv2.imread(image_path)
        X = np.zeros(im.shape, dtype='float32')
        for c in range(3):
            X[:,:,c] = im[:,:,c] / np.amax(im[:,:,c])
        
        return X


# ----------------------------------------------------------------------------- train.py


def load_dataset(sample_paths):
    # TF likes to convert string it gets its hands on to bytes. Watch out for that. It will break stuff
    for s, sample in enumerate(sample_paths):
        sample_as_list = list(sample)
        for i in range(len(sample_as_list)):
            if type(sample_as_list[i]) == bytes:
                sample_as_list[i] = sample_as_list[i].decode()
        sample_paths[s] = sample_as_list

    # Load the first sample just to get dimensions
    im_path, _, _ = sample_paths[0] 
    im = cv2.imread(im_path)
    N = len(sample_paths)  # noqa: F841
    
    # Calculate output dimensions
    pooling_summary = [2, 2, 2]
    cell_size = 1 
    h, w, _ = im.shape
    for pooling_factor in pooling_summary:
        cell_size *= pooling_factor
        w = int( math.floor(w / pooling_factor) )
        h = int( math.floor(h / pooling_factor) )
    
    # Load the data
    random.shuffle(sample_paths)
    for n, (image_path, label_path, letters) in enumerate(sample_paths):  # noqa: B007
        X = CaptchaBreaker.load_and_preprocess_image(image_path)
        Y = np.zeros( (h, w, 67 + 3), dtype='float32' )

        with open(label_path) as f: 
            label_data = json.load(f)
        
        for i in range(h):
            for j in range(w):
                # If the cell prior overlaps the label it overlaps most by over detect_thres, train it to match that label
                # If the cell prior overlaps the label it overlaps most by over no_detect_thres, but less than detect_thres
                # this cell gets a free pass (i.e outputs disregarded; no loss incurred). Otherwise, this cell should be trained 
                # to output an objectness of zero.
                detect_thres    = 0.6
                no_detect_thres = 0.4
                
                cell_offset = np.array([j, i])
                cell_rect   = CaptchaBreaker.decode_rect(Y[i, j, 63:67], cell_offset, cell_size) # The slice we're taking here will always just be 4 zeros, but hopefully this makes it more obvious we're getting the prior for this cell
                
                best_label_rect = None
                best_label_ind = None
                best_label_overlap = 0
                for l, label_rect in enumerate(label_data):
                    label_overlap = CaptchaBreaker.overlap_fraction(cell_rect, label_rect)
                    if label_overlap > best_label_overlap:
                        best_label_overlap = label_overlap
                        best_label_ind, best_label_rect = l, label_rect  # noqa: F841

                if best_label_overlap > detect_thres and CaptchaBreaker.point_is_inside_rect(CaptchaBreaker.rect_center(label_rect), cell_rect):
                    catagory_ind = CaptchaBreaker.label_ind_lookup.index( label_rect['label'] ) 
                    Y[i, j, catagory_ind] = 1
                    Y[i, j, 62]         = 1
                    Y[i, j, 63:67]      = CaptchaBreaker.encode_rect(best_label_rect, cell_offset, cell_size)
                    Y[i, j, 67:]        = [1, 10, 1]
                elif best_label_overlap > no_detect_thres:
                    Y[i, j, 67:] = [0, 0, 0]
                else:
                    Y[i, j, 62] = 0 # This was already the value there but lets make it explicit...
                    Y[i, j, 68] = 1

        yield X, Y
    
def get_dataset_dims_from_generator(gen, args=[]):  # noqa: B006
    g = gen(*args)
    return tuple( map(lambda x:x.shape, next(g)) )

def make_train_and_test_datasets(data_dir, validation_split=0.8):
    # Get file locations
    if type(data_dir) == bytes:
        data_dir = data_dir.decode()
    sample_paths = [ (os.path.join(data_dir, sample_path), os.path.join(data_dir, sample_path[:-4]+'.json'), sample_path[:-4]) for sample_path in os.listdir(data_dir) if sample_path[-4:] == '.png' ]
    random.shuffle( sample_paths )
    
    # Create tf.data.Dataset objects
    N_train = int(len(sample_paths) * validation_split)
    train_sample_paths = sample_paths[:N_train]    
    train_dataset = tf.data.Dataset.from_generator(
        load_dataset, 
        args=[train_sample_paths],
        output_types=(tf.float32, tf.float32),
        output_shapes=get_dataset_dims_from_generator(load_dataset, [train_sample_paths]))

    test_sample_paths = sample_paths[N_train:]
    test_dataset = tf.data.Dataset.from_generator(
        load_dataset, 
        args=[test_sample_paths],
        output_types=(tf.float32, tf.float32),
        output_shapes=get_dataset_dims_from_generator(load_dataset, [test_sample_paths]))
    
    # Log paths to images used in training and validation
    with open(os.path.join(OUT, 'train_image_paths.txt'), 'w') as f:
        for image_path, _, _ in sample_paths[:N_train]:
            f.write(f'{image_path}\n')

    with open(os.path.join(OUT, 'test_image_paths.txt'), 'w') as f:
        for image_path, _, _ in sample_paths[N_train:]:
            f.write(f'{image_path}\n')
        
    return train_dataset, test_dataset


if __name__ == '__main__':
    # Load data
    data_dir = DATA
    train_dataset, test_dataset = make_train_and_test_datasets( data_dir )

    # Configure optimizer
    optimizer = tf.keras.optimizers.SGD(
        learning_rate=0.0001, momentum=0.0, nesterov=False, name="SGD"
    )

    # Compile and fit model
    model = CaptchaBreaker()
    model.compile(optimizer=optimizer, loss=CaptchaBreaker.yolo_loss)
    try:
        model.fit(
            train_dataset.batch(10), 
            epochs=3,
            validation_data=test_dataset.batch(10) )
    except Exception as e:
        model.save(os.path.join(OUT, 'aborted_model.keras'))
        print('Exception encountered. Training aborted and model parameters saved. Searching for example input to reproduce exception...')
        for input_tensor, _ in train_dataset.batch(1):
            model_output = model.predict(input_tensor)
            if np.isnan(model_output).any():
                print('Found nan in output. Saving input and output and exiting.')
                np.save(os.path.join(OUT, 'problem_input'), input_tensor.numpy())
                np.save(os.path.join(OUT, 'problem_output'), model_output)
                exit()
            if np.isinf(model_output).any():
                print('Found inf in output. Saving input and output and exiting.')
                np.save(os.path.join(OUT, 'problem_input'), input_tensor.numpy())
                np.save(os.path.join(OUT, 'problem_output'), model_output)
                exit()
            
        print('Failed to find bad output. Throwing original error...')
        raise e

    # Save :D
    model.save(os.path.join(OUT, 'model_v6.1.keras'))