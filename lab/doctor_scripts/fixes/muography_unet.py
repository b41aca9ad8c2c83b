"""FIXED COPY (the candidate fix: each split's arrays read from the HDF5 file once and kept in memory; the
binomial draw and the rotation still per example and epoch).

Muography projection denoising with a 2D U-Net, training: train_unet0XY_ultralow_flux.py of Muography_Denoising,
the U-Net fine-tuned at 1 % muon flux on a ``tf.data.Dataset.from_generator`` over H5DataGenerator, a Python
generator that reads each example from an HDF5 file with h5py, draws its reduced-flux input with
``np.random.binomial`` and rotates it at random.

Source: https://github.com/SamuelDominguezGamero/Muography_Denoising at d86427465a17def2943093c44d195a9fad2a8a88
(MuonGeneration/UNETs/UNET0/train_unet0XY_ultralow_flux.py). Re-written here in the source's structure and order,
not copied: unet_2d (N_LEVELS conv blocks of two Conv2D 3x3 no-bias + BatchNormalization + relu with
MaxPooling2D, a bottleneck block, Conv2DTranspose 2x2 stride 2 + concatenate + conv block per level, a 1x1
sigmoid Conv2D in float32); the Charbonnier loss and the PSNR and SSIM metrics; _apply_low_flux (``Binomial(v,
FLUX_FRACTION) / 255``); H5DataGenerator, whose ``__call__`` opens the HDF5 file, shuffles the indexes for the
training split and, per example, reads ``poca[idx, :, :, 0:1]`` and ``gt[idx, :, :, 0:1]``, applies
_apply_low_flux and, with augmentation, a random ``np.rot90``, and yields the pair; get_dataset is
``from_generator(gen, output_signature=...)`` then ``repeat()``, ``shuffle(256)`` for training, ``batch`` and
``prefetch(AUTOTUNE)``; main counts the splits (steps = n // BATCH_SIZE), builds the three datasets, loads the
model (the 10 %-flux checkpoint, compiled with Adam(LEARNING_RATE), the Charbonnier loss and PSNR, SSIM),
resumes from the 1 %-flux checkpoint's meta if one exists, and fits ``model.fit(train_ds, epochs=EPOCHS,
steps_per_epoch=steps_train, initial_epoch=initial_epoch, validation_data=val_ds, validation_steps=steps_val,
callbacks=[full_checkpoint, early_stopping, csv_logger, progress_cb, monitor_cb], verbose=0)``, then evaluates the
best model on the test split and saves the final one; FullTrainingCheckpoint saves the last model (and the best by
val_loss) as .keras files and a JSON meta each epoch; EpochProgressCallback prints progress every 20 batches.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/muography_unet/data/datasets/dataset0.h5``: 256/48/32 generated
examples of 64x64 for the repository's POCA projections of 128x128) and the outputs under a fresh temporary folder
each run (a resumed run would start after its last epoch); SIZE_IMAGES 64 for 128, N_FILTERS 8 for 128 and
N_LEVELS 3 for 4 (a step runs on 2 CPU cores); EPOCHS 3 for 100; the model built by unet_2d and compiled as
_load_pretrained compiles the checkpoint (no 10 %-flux checkpoint here: the stage-1 run that writes it is another
script); the mixed_bfloat16 policy left out (float32 on the CPU; the GPU checks and memory growth kept);
EpochMonitoringCallback, the dataset preview and the visualizations left out (they need matplotlib, not installed
here; the source's _visualize_split skips itself without it); ``os.environ`` settings before the TensorFlow import
kept.
"""

import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
os.environ["TF_XLA_FLAGS"] = "--tf_xla_auto_jit=0"

gc.collect()

try:
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.keras import Model, layers
    tf.get_logger().setLevel("ERROR")
    tf.autograph.set_verbosity(0)
    keras.backend.clear_session()
    tf.config.optimizer.set_jit(False)
except ImportError:
    print("[ERROR] TensorFlow required. Install: pip install tensorflow")
    sys.exit(1)

try:
    import h5py
except ImportError:
    print("[ERROR] h5py required. Install: pip install h5py")
    sys.exit(1)

# ===========================================================================
# CONFIG
# ===========================================================================

BASE = Path(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts")) / "muography_unet"
DATA = BASE / "data"
DATASETS = DATA / "datasets"

H5_FILE = DATASETS / "dataset0.h5"
OUTPUT_DIR = Path(tempfile.mkdtemp(prefix="muography_unet-")) / "models_XY_1_perc"

# Hyperparameters
BATCH_SIZE = 16
LEARNING_RATE = 1e-3
EPOCHS = 3
SIZE_IMAGES = 64
N_FILTERS = 8
FILTER_SIZE = 3
N_LEVELS = 3

FLUX_FRACTION = 0.01   # Binomial subsampling: keep ~1 % of muon counts per pixel

USE_GPU = True
FORCE_RESTART = False
USE_AUGMENTATION = True   # On-the-fly rotations x4 (train split only)


# ===========================================================================
# ARCHITECTURE — UNET2D
# ===========================================================================

def conv_block(input_tensor, n_filters, name, repeat_conv=2):
    x = input_tensor
    for i in range(1, repeat_conv + 1):
        x = layers.Conv2D(
            n_filters, (FILTER_SIZE, FILTER_SIZE),
            padding="same", use_bias=False,
            name=f"{name}_conv{i}"
        )(x)
        x = layers.BatchNormalization(name=f"{name}_bn{i}")(x)
        x = layers.Activation("relu", name=f"{name}_relu{i}")(x)
    return x


def unet_2d(input_shape=(SIZE_IMAGES, SIZE_IMAGES, 1),
            n_levels=N_LEVELS, n_filters=N_FILTERS):
    """UNET2D — single-channel input, single-channel sigmoid output."""
    inputs = layers.Input(shape=input_shape)
    encoder_outputs = []

    x = inputs
    for i in range(n_levels):
        filters = n_filters * (2 ** i)
        x = conv_block(x, filters, name=f"Enc{i+1}")
        encoder_outputs.append(x)
        x = layers.MaxPooling2D((2, 2), name=f"Pool{i+1}")(x)

    x = conv_block(x, n_filters * (2 ** n_levels), name="Bottleneck")

    for i in range(n_levels, 0, -1):
        filters = n_filters * (2 ** (i - 1))
        x = layers.Conv2DTranspose(filters, (2, 2), strides=(2, 2), padding="same", name=f"Up{i}")(x)
        x = layers.concatenate([x, encoder_outputs[i - 1]], name=f"Concat{i}")
        x = conv_block(x, filters, name=f"Dec{i}")

    outputs = layers.Conv2D(1, (1, 1), activation="sigmoid", dtype="float32", name="Output")(x)
    return Model(inputs, outputs)


# ===========================================================================
# LOSS & METRICS
# ===========================================================================

def charbonnier_loss(y_true, y_pred, eps=1e-3):
    y_true = tf.cast(y_true, y_pred.dtype)
    return tf.reduce_mean(tf.sqrt(tf.square(y_true - y_pred) + eps * eps))


def psnr_metric(y_true, y_pred):
    y_true = tf.cast(y_true, y_pred.dtype)
    return tf.image.psnr(y_true, y_pred, max_val=1.0)


def ssim_metric(y_true, y_pred):
    y_true = tf.cast(y_true, y_pred.dtype)
    return tf.image.ssim(y_true, y_pred, max_val=1.0)


# ===========================================================================
# PREPROCESSING
# ===========================================================================

def _apply_low_flux(poca_uint8, flux_fraction=FLUX_FRACTION, rng=None):
    counts = poca_uint8.astype(np.int32)
    if rng is not None:
        sparse = rng.binomial(counts, flux_fraction)
    else:
        sparse = np.random.binomial(counts, flux_fraction)
    return sparse.astype(np.float32) / 255.0


# ===========================================================================
# DATA STREAMING GENERATOR
# ===========================================================================

class H5DataGenerator:
    """
    Streams single-channel XY inputs from dataset0.h5.

    Per sample:
      raw uint8 → Binomial(v, FLUX_FRACTION) → / 255  →  float32 (64,64,1)

    GT is unchanged (full-flux float32, single channel).
    """

    def __init__(self, h5_path, split, augment=False):
        self.h5_path = h5_path
        self.split = split
        self.augment = augment
        with h5py.File(self.h5_path, "r") as f:
            self.indices = list(range(f[f"{self.split}/poca"].shape[0]))

    def __call__(self):
        if not hasattr(self, "arrays"):  # the fix: the split read once, kept in memory
            with h5py.File(self.h5_path, "r") as f:
                self.arrays = (f[f"{self.split}/poca"][..., 0:1], f[f"{self.split}/gt"][..., 0:1])
        if True:  # (the source's with-block, its body kept as it is indented)
            poca_ds, gt_ds = self.arrays

            if self.split == "train":
                idx_list = self.indices.copy()
                np.random.shuffle(idx_list)
            else:
                idx_list = self.indices

            for idx in idx_list:
                x_raw = poca_ds[idx, :, :, 0:1]              # uint8  (64,64,1)
                x = _apply_low_flux(x_raw)                   # float32 (64,64,1) in [0,1]
                y = gt_ds[idx, :, :, 0:1].astype(np.float32)

                if self.augment:
                    k = np.random.randint(0, 4)
                    if k > 0:
                        x = np.rot90(x, k, axes=(0, 1))
                        y = np.rot90(y, k, axes=(0, 1))

                yield x, y


def get_dataset(h5_path, split, batch_size, shuffle=False, augment=False):
    gen = H5DataGenerator(h5_path, split, augment=augment)
    output_signature = (
        tf.TensorSpec(shape=(SIZE_IMAGES, SIZE_IMAGES, 1), dtype=tf.float32),
        tf.TensorSpec(shape=(SIZE_IMAGES, SIZE_IMAGES, 1), dtype=tf.float32),
    )
    dataset = tf.data.Dataset.from_generator(gen, output_signature=output_signature)
    dataset = dataset.repeat()
    if shuffle:
        dataset = dataset.shuffle(buffer_size=256, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size, drop_remainder=shuffle)
    dataset = dataset.prefetch(buffer_size=tf.data.AUTOTUNE)
    return dataset


# ===========================================================================
# UTILITIES
# ===========================================================================

def _count_samples(h5_path):
    with h5py.File(h5_path, "r") as f:
        return {s: f[f"{s}/poca"].shape[0] for s in ("train", "val", "test")}


# ===========================================================================
# CALLBACKS
# ===========================================================================

class EpochProgressCallback(keras.callbacks.Callback):
    """Intra-epoch progress bar printed every `log_every` batches."""

    def __init__(self, steps_per_epoch, log_every=20):
        super().__init__()
        self.steps_per_epoch = steps_per_epoch
        self.log_every = log_every
        self._epoch = 0
        self._t0_epoch = 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch + 1
        self._t0_epoch = time.time()
        print(f"\n[TRAIN] Epoch {self._epoch}/{self.params['epochs']}")

    def on_train_batch_end(self, batch, logs=None):
        logs = logs or {}
        step = batch + 1
        if step % self.log_every == 0 or step == self.steps_per_epoch:
            elapsed = time.time() - self._t0_epoch
            remaining = (elapsed / step) * (self.steps_per_epoch - step)
            pct = 100 * step / self.steps_per_epoch
            loss = logs.get("loss", float("nan"))
            print(
                f"  step {step:4d}/{self.steps_per_epoch}  "
                f"[{'#' * int(pct // 5):<20}] {pct:5.1f}%  "
                f"loss={loss:.6f}  elapsed={elapsed:6.1f}s  eta={remaining:5.1f}s"
            )

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        elapsed = time.time() - self._t0_epoch
        val_loss = logs.get("val_loss", float("nan"))
        val_psnr = logs.get("val_psnr_metric", float("nan"))
        val_ssim = logs.get("val_ssim_metric", float("nan"))
        print(
            f"  → Epoch {self._epoch} done in {elapsed:.1f}s  "
            f"val_loss={val_loss:.6f}  PSNR={val_psnr:.2f}dB  SSIM={val_ssim:.4f}"
        )


class FullTrainingCheckpoint(keras.callbacks.Callback):
    """Saves best_model_0_XY_1_perc.keras (by val_loss) + last_checkpoint each epoch."""

    def __init__(self, checkpoint_dir, monitor="val_loss"):
        super().__init__()
        self.checkpoint_dir = Path(checkpoint_dir)
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        self.monitor = monitor
        self.best = np.inf
        self.meta_path = self.checkpoint_dir / "training_meta_0_XY_1_perc.json"

        if self.meta_path.exists():
            with open(self.meta_path) as f:
                meta = json.load(f)
            self.best = meta.get("best_val_loss", np.inf)
            print(f"[CKPT]  Previous best    : val_loss={self.best:.6f}")

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        current = logs.get(self.monitor)
        if current is None:
            return

        last_path = self.checkpoint_dir / "last_checkpoint_0_XY_1_perc.keras"
        self.model.save(last_path)

        meta = {
            "last_epoch": epoch + 1,
            "best_val_loss": float(self.best),
            "last_val_loss": float(current),
            "last_val_psnr": float(logs.get("val_psnr_metric", 0.0)),
            "last_val_ssim": float(logs.get("val_ssim_metric", 0.0)),
        }

        if current < self.best:
            self.best = current
            best_path = self.checkpoint_dir / "best_model_0_XY_1_perc.keras"
            self.model.save(best_path)
            meta["best_val_loss"] = float(self.best)
            print(f"[CKPT]  * New best        : val_loss={current:.6f} → saved {best_path.name}")

        with open(self.meta_path, "w") as f:
            json.dump(meta, f, indent=2)


_CUSTOM_OBJECTS = {
    "charbonnier_loss": charbonnier_loss,
    "psnr_metric": psnr_metric,
    "ssim_metric": ssim_metric,
}


# ===========================================================================
# MAIN
# ===========================================================================

def main():
    print("=" * 80)
    start_time = time.time()

    if USE_GPU:
        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            for gpu in gpus:
                try:
                    tf.config.experimental.set_memory_growth(gpu, True)
                except RuntimeError as e:
                    print(f"[WARN]  set_memory_growth failed: {e}")
            print(f"[HW]    GPU detected     : {len(gpus)} x {gpus[0].name.split('/')[-1]}")
        else:
            print("[HW]    No GPU detected — running on CPU")

    tf.random.set_seed(42)
    np.random.seed(42)

    if not H5_FILE.exists():
        sys.exit(f"[ERROR] H5 file not found: {H5_FILE}")

    sizes = _count_samples(H5_FILE)
    steps_train = sizes["train"] // BATCH_SIZE
    steps_val = sizes["val"] // BATCH_SIZE
    steps_test = sizes["test"] // BATCH_SIZE
    print(f"[DATA]  Splits           : train={sizes['train']}  val={sizes['val']}  test={sizes['test']}")
    print(f"[DATA]  Batch size       : {BATCH_SIZE}  ({steps_train} steps/epoch)")

    train_ds = get_dataset(H5_FILE, "train", BATCH_SIZE, shuffle=True, augment=USE_AUGMENTATION)
    val_ds = get_dataset(H5_FILE, "val", BATCH_SIZE, shuffle=False, augment=False)
    test_ds = get_dataset(H5_FILE, "test", BATCH_SIZE, shuffle=False, augment=False)

    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    CHECKPOINT_DIR = OUTPUT_DIR / "checkpoints"
    CHECKPOINT_DIR.mkdir(parents=True, exist_ok=True)
    meta_path = CHECKPOINT_DIR / "training_meta_0_XY_1_perc.json"
    initial_epoch = 0

    def _load_pretrained():
        m = unet_2d()
        m.compile(optimizer=keras.optimizers.Adam(learning_rate=LEARNING_RATE),
                  loss=charbonnier_loss, metrics=[psnr_metric, ssim_metric], jit_compile=False)
        return m

    if FORCE_RESTART:
        if meta_path.exists():
            meta_path.unlink()
        model = _load_pretrained()
    elif meta_path.exists():
        with open(meta_path) as f:
            meta = json.load(f)
        initial_epoch = meta.get("last_epoch", 0)
        last_ckpt = CHECKPOINT_DIR / "last_checkpoint_0_XY_1_perc.keras"
        if last_ckpt.exists():
            model = keras.models.load_model(str(last_ckpt), custom_objects=_CUSTOM_OBJECTS)
        else:
            initial_epoch = 0
            model = _load_pretrained()
    else:
        model = _load_pretrained()

    print(f"[MODEL] Parameters       : {model.count_params():,}")

    full_checkpoint = FullTrainingCheckpoint(CHECKPOINT_DIR, monitor="val_loss")
    early_stopping = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=15, restore_best_weights=False, verbose=1
    )
    csv_logger = keras.callbacks.CSVLogger(
        OUTPUT_DIR / "training_log_0_XY_1_perc.csv", append=True
    )
    progress_cb = EpochProgressCallback(steps_per_epoch=steps_train, log_every=20)

    model.fit(
        train_ds,
        epochs=EPOCHS,
        steps_per_epoch=steps_train,
        initial_epoch=initial_epoch,
        validation_data=val_ds,
        validation_steps=steps_val,
        callbacks=[full_checkpoint, early_stopping, csv_logger, progress_cb],
        verbose=0,
    )

    elapsed = time.time() - start_time
    print(f"[TIME]  Fine-tuning finished : {elapsed:.1f}s  ({elapsed/60:.1f} min)")

    best_model_path = CHECKPOINT_DIR / "best_model_0_XY_1_perc.keras"
    try:
        best_model = keras.models.load_model(str(best_model_path), custom_objects=_CUSTOM_OBJECTS)
        results = best_model.evaluate(test_ds, steps=steps_test, verbose=0, return_dict=True)
        print(f"[EVAL]  Test Charbonnier : {results['loss']:.6f}")
    except Exception as e:
        print(f"[ERROR] Could not evaluate best model: {e}")

    final_model_path = OUTPUT_DIR / "model_epoch_final_0_XY_1_perc.keras"
    model.save(final_model_path)


if __name__ == "__main__":
    main()
