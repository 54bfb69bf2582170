"""A separate process that loads or saves a preset, for the tests of concurrent and killed
writers.

Run from the repository root (so that this checkout's keras_bert is imported), with
``KERAS_BERT_HOME`` set::

    python -m tests.presets.writer_process zip ARCHIVE [--pause READY GO]
    python -m tests.presets.writer_process registry BASE_URL
    python -m tests.presets.writer_process save SOURCE TARGET MOMENT

``zip`` loads a local Google zip; with ``--pause`` the conversion stops just before it writes
the converted preset: the process creates READY and waits until GO exists (so a test can
kill it there, or run a second writer meanwhile). ``registry`` loads the test registry
entry ``toy`` from BASE_URL. The preset's directory is printed on success. ``save`` loads
the encoder preset SOURCE and saves it over TARGET, printing ``paused`` and sleeping at
MOMENT (see `SAVE_MOMENTS`) for the test to look at TARGET and kill it there.
"""

import os
import sys
import time


def _pause_conversion(ready, go):
    from keras_bert.checkpoints import keras_bert_layout

    write = keras_bert_layout.write

    def paused(*args, **kwargs):
        with open(ready, "w"):
            pass
        while not os.path.exists(go):
            time.sleep(0.05)
        return write(*args, **kwargs)

    keras_bert_layout.write = paused


# Where ``save`` stops: the checkpoint's data file written into the new directory (beside the
# target); the new directory complete, just before it is swapped with the target; just
# after the swap, before the old directory is removed.
SAVE_MOMENTS = ("writing", "swapping", "swapped")


def _pause():
    print("paused", flush=True)
    time.sleep(600)


def _pause_save(moment):
    from keras_bert import dir_swap, storage

    move, exchange = storage._move_file, dir_swap.exchange

    def moved(source, target):
        move(source, target)
        if target.endswith(".data-00000-of-00001"):
            _pause()

    def exchanged(a, b):
        if moment == "swapping":
            _pause()
        exchange(a, b)
        if moment == "swapped":
            _pause()

    if moment == "writing":
        storage._move_file = moved
    else:
        dir_swap.exchange = exchanged


def main(argv):
    from keras_bert.presets import PRESETS, load_preset

    mode, target = argv[0], argv[1]
    if mode == "zip":
        if argv[2:3] == ["--pause"]:
            _pause_conversion(argv[3], argv[4])
        preset = load_preset(target, progress=False)
    elif mode == "save":
        from keras_bert import BertEncoder

        _pause_save(argv[3])
        BertEncoder.from_preset(target).save_to_preset(argv[2])
        return
    elif mode == "registry":
        from tests.presets.google_zips import TOY

        PRESETS["toy"] = TOY
        os.environ["KERAS_BERT_BASE_URL"] = target
        preset = load_preset("toy", progress=False)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(preset.path)


if __name__ == "__main__":
    main(sys.argv[1:])
