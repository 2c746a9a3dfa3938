"""Training the reader on a tiny random qwen2 model: the decoder's shortcuts (a shared prefix, frozen layers run once,
the last layer on the loss's positions only) compute what the whole model computes; LoRA starts as the model; the
adapter file is what llama.cpp reads; training lowers the held-out loss, and a killed run resumes to the same
weights."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
gguf = pytest.importorskip("gguf")

from tiny_qwen2 import SHAPE, lora_with_updates, tiny_weights

from bookrag.errors import ConfigError
from programs.train.adapter_file import read_adapter, write_adapter
from programs.train.examples import TrainingExample, shared_prefix
from programs.train.frozen_start import FrozenStart
from programs.train.lora import LoraWeights
from programs.train.lora_config import MATRICES, LoraConfig
from programs.train.qwen2 import Qwen2Decoder
from programs.train.trainer import CHECKPOINT, LoraTrainer
from programs.train.training_plan import TrainingPlan


def whole_output(decoder: Qwen2Decoder, tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        out, _ = decoder.run(decoder.embed(torch.tensor([tokens])), range(SHAPE.layers), 0)
    return out[0]


def test_a_prefix_run_then_the_rest_equals_one_run_of_the_whole():
    decoder = Qwen2Decoder(SHAPE, tiny_weights())
    tokens = [3, 7, 1, 9, 12, 5, 30, 2, 8, 11]
    with torch.no_grad():
        _, prefix_kv = decoder.run(decoder.embed(torch.tensor([tokens[:4]])), range(SHAPE.layers), 0)
        rest, _ = decoder.run(decoder.embed(torch.tensor([tokens[4:]])), range(SHAPE.layers), 4, prefix_kv)
    assert torch.allclose(rest[0], whole_output(decoder, tokens)[4:], atol=1e-5)


def test_the_last_layer_on_wanted_positions_equals_the_whole_output_there():
    decoder = Qwen2Decoder(SHAPE, tiny_weights(), lora_with_updates(LoraConfig(top_layers=2, dropout=0.0)))
    prefix, a, b = [4, 4, 9], [1, 2, 3, 4, 5, 6], [7, 8, 9, 10]
    with torch.no_grad():
        _, prefix_kv = decoder.run(decoder.embed(torch.tensor([prefix])), range(SHAPE.layers), 0)
        batch = torch.nn.utils.rnn.pad_sequence([decoder.embed(torch.tensor(x)) for x in (a, b)], batch_first=True)
        wanted = torch.tensor([[3, 4, 5], [1, 2, 2]])
        out, _ = decoder.run(batch, range(SHAPE.layers), 3, prefix_kv, outputs=wanted)
    assert torch.allclose(out[0], whole_output(decoder, prefix + a)[3 + 3:3 + 6], atol=1e-5)
    assert torch.allclose(out[1, :2], whole_output(decoder, prefix + b)[3 + 1:3 + 3], atol=1e-5)


def test_frozen_layers_run_once_then_the_adapted_ones_equal_the_whole_model(tmp_path):
    lora = lora_with_updates(LoraConfig(top_layers=2, dropout=0.0))
    decoder = Qwen2Decoder(SHAPE, tiny_weights(), lora)
    example = TrainingExample("e", (5, 6, 7), (8, 9, 10, 11, 12), 3)
    frozen = FrozenStart(decoder, 2, example.prefix, tmp_path)
    with torch.no_grad():
        _, prefix_kv = decoder.run(frozen.prefix_hidden, range(2, 4), 0)
        out, _ = decoder.run(frozen(example).unsqueeze(0), range(2, 4), 3, prefix_kv)
    assert torch.allclose(out[0], whole_output(decoder, [5, 6, 7, 8, 9, 10, 11, 12])[3:], atol=1e-2)
    assert any((tmp_path / "below-layer-2").glob("*.pt")), "the frozen output is kept on disk for a resumed run"


def test_lora_starts_as_the_model_and_its_update_is_scale_b_a():
    weights = tiny_weights()
    config = LoraConfig(rank=4, alpha=8.0, top_layers=1, matrices=("attn_q",), dropout=0.0)
    fresh = LoraWeights(config, SHAPE).eval()
    tokens = [1, 5, 9, 2]
    assert torch.equal(whole_output(Qwen2Decoder(SHAPE, weights, fresh), tokens),
                       whole_output(Qwen2Decoder(SHAPE, weights), tokens))
    trained = lora_with_updates(config)
    (name, a, b), = trained.named_matrices()
    merged = dict(weights, **{name: weights[name] + config.scale * b.detach() @ a.detach()})
    assert torch.allclose(whole_output(Qwen2Decoder(SHAPE, weights, trained), tokens),
                          whole_output(Qwen2Decoder(SHAPE, merged), tokens), atol=1e-5)


def test_the_adapter_file_is_a_gguf_lora_adapter_that_reads_back(tmp_path):
    lora = lora_with_updates(LoraConfig(rank=4, alpha=8.0, top_layers=2, matrices=MATRICES))
    path = write_adapter(lora, tmp_path / "adapter.gguf")
    reader = gguf.GGUFReader(str(path))
    fields = {key: reader.get_field(key).contents() for key in
              ("general.architecture", "general.type", "adapter.type", "adapter.lora.alpha")}
    assert fields == {"general.architecture": "qwen2", "general.type": "adapter", "adapter.type": "lora",
                      "adapter.lora.alpha": 8.0}
    alpha, matrices = read_adapter(path)
    assert alpha == 8.0 and set(matrices) == {f"blk.{n}.{m}.weight" for n in (2, 3) for m in MATRICES}
    for name, a, b in lora.named_matrices():
        # float16 in the file; llama.cpp checks lora_a is rank x in and lora_b out x rank (GGUF order reversed)
        assert torch.allclose(matrices[name][0], a.detach(), atol=1e-3)
        assert torch.allclose(matrices[name][1], b.detach(), atol=1e-3)
    assert not list(tmp_path.glob(".*tmp"))


def test_training_on_top_of_an_adapter_starts_from_its_weights(tmp_path):
    first = lora_with_updates(LoraConfig(rank=4, alpha=8.0, top_layers=2))
    second = LoraWeights(LoraConfig(rank=4, alpha=16.0, top_layers=2), SHAPE)
    second.start_from(*read_adapter(write_adapter(first, tmp_path / "a.gguf")))
    tokens = [3, 1, 4, 1, 5]
    assert torch.allclose(whole_output(Qwen2Decoder(SHAPE, tiny_weights(), second.eval()), tokens),
                          whole_output(Qwen2Decoder(SHAPE, tiny_weights(), first), tokens), atol=1e-2)
    with pytest.raises(ConfigError, match="rank"):
        LoraWeights(LoraConfig(rank=2, top_layers=2), SHAPE).start_from(*read_adapter(tmp_path / "a.gguf"))


def copy_task(n: int, seed: int) -> list[TrainingExample]:
    """Prompts whose reply repeats the token before the reply: learnable by a tiny model in a few steps."""
    g = torch.Generator().manual_seed(seed)
    examples = []
    for i in range(n):
        body = torch.randint(10, SHAPE.vocab, (6,), generator=g).tolist()
        examples.append(TrainingExample(f"{seed}-{i}", (1, 2, 3), tuple(body + [4, body[-1], body[-1], 5]), 7))
    return examples


def trained(folder: Path, plan: TrainingPlan, seed: int = 0):
    decoder = Qwen2Decoder(SHAPE, tiny_weights(), LoraWeights(LoraConfig(rank=4, top_layers=2), SHAPE, seed=seed))
    trainer = LoraTrainer(decoder, plan, folder, progress=False, say=lambda *_: None)
    record = trainer.fit(copy_task(48, seed=1), copy_task(8, seed=2))
    return decoder.lora, record


def test_training_lowers_the_held_out_loss_and_keeps_the_best_weights(tmp_path):
    plan = TrainingPlan(epochs=3, batch_size=8, learning_rate=1e-2, evaluations_per_epoch=1, patience=3)
    _, record = trained(tmp_path, plan)
    assert record.steps == 18 and [step for step, _ in record.dev_loss] == [0, 6, 12, 18]  # the start, each epoch
    assert record.dev_loss[-1][1] < record.dev_loss[0][1] < record.train_loss[0][1]
    assert record.best_step == min(record.dev_loss, key=lambda point: point[1])[0]


def test_a_run_out_of_time_keeps_its_best_weights_and_goes_on_when_given_more(tmp_path):
    plan = TrainingPlan(epochs=2, batch_size=8, learning_rate=1e-2, evaluations_per_epoch=1, patience=3)
    start = LoraWeights(LoraConfig(rank=4, top_layers=2), SHAPE).state_dict()
    stopped, record = trained(tmp_path / "run", dataclasses.replace(plan, minutes=0))
    assert record.out_of_time and record.steps == 0 and record.dev_loss == [(0, record.dev_loss[0][1])]
    assert all(torch.equal(stopped.state_dict()[key], value) for key, value in start.items())
    went_on, record = trained(tmp_path / "run", plan)
    whole, _ = trained(tmp_path / "whole", plan)
    assert record.steps == 12 and not record.out_of_time
    for key, value in whole.state_dict().items():
        assert torch.allclose(went_on.state_dict()[key], value, atol=1e-6), key


RESUME_SCRIPT = """
import sys, time
sys.path.insert(0, {tests!r}); sys.path.insert(0, {root!r})
import test_reader_training as t
from programs.train.trainer import LoraTrainer
step = LoraTrainer._loss
def slow(self, *a):
    time.sleep(0.05)
    return step(self, *a)
LoraTrainer._loss = slow
t.trained(t.Path({folder!r}), t.TrainingPlan(epochs=4, batch_size=8, learning_rate=1e-2, evaluations_per_epoch=1, patience=9))
"""


def test_a_killed_training_resumes_and_ends_with_the_weights_of_one_never_killed(tmp_path):
    plan = TrainingPlan(epochs=4, batch_size=8, learning_rate=1e-2, evaluations_per_epoch=1, patience=9)
    whole, _ = trained(tmp_path / "whole", plan)
    folder = tmp_path / "killed"
    script = RESUME_SCRIPT.format(tests=str(Path(__file__).parent), root=str(Path(__file__).parents[1]),
                                  folder=str(folder))
    process = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 120
    while not (folder / CHECKPOINT).is_file() or torch.load(folder / CHECKPOINT, weights_only=False)[
            "record"]["steps"] < 5:
        assert process.poll() is None and time.monotonic() < deadline, "the training ended before it could be killed"
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    steps_when_killed = torch.load(folder / CHECKPOINT, weights_only=False)["record"]["steps"]
    assert steps_when_killed < 24
    resumed, record = trained(folder, plan)
    assert record.steps == 24
    for key, value in whole.state_dict().items():
        assert torch.allclose(resumed.state_dict()[key], value, atol=1e-6), key


def test_examples_that_do_not_share_a_prefix_keep_their_whole_prompt():
    a, b = TrainingExample("a", (1, 2), (3, 4, 5), 2), TrainingExample("b", (1, 9), (6, 7), 1)
    assert shared_prefix([a, a]) == [a, a]
    assert shared_prefix([a, b]) == [TrainingExample("a", (), (1, 2, 3, 4, 5), 4), TrainingExample("b", (), (1, 9, 6, 7), 3)]


def test_in_bfloat16_the_decoder_computes_what_it_does_in_float32_and_trains(tmp_path):
    """The precision training uses where the CPU multiplies bfloat16 natively (programs/train/cpu.py)."""
    lora = lora_with_updates(LoraConfig(top_layers=2, dropout=0.0))
    tokens = [3, 7, 1, 9, 12, 5]
    wide = whole_output(Qwen2Decoder(SHAPE, tiny_weights(), lora), tokens)
    narrow = whole_output(Qwen2Decoder(SHAPE, tiny_weights(), lora, torch.bfloat16), tokens)
    assert narrow.dtype == torch.bfloat16
    assert torch.allclose(narrow.float(), wide, atol=0.1 * wide.abs().max().item())
    decoder = Qwen2Decoder(SHAPE, tiny_weights(), LoraWeights(LoraConfig(rank=4, top_layers=2), SHAPE), torch.bfloat16)
    plan = TrainingPlan(epochs=3, batch_size=8, learning_rate=1e-2, evaluations_per_epoch=1, patience=3)
    record = LoraTrainer(decoder, plan, tmp_path, progress=False, say=lambda *_: None).fit(copy_task(48, seed=1),
                                                                                           copy_task(8, seed=2))
    assert record.dev_loss[-1][1] < record.dev_loss[0][1]


def test_int8_frozen_layers_compute_what_float32_does_and_keep_their_own_cache(tmp_path):
    """The frozen layers' products in int8 (--frozen-int8) stay close to float32; only those layers lose their float
    weights, and their outputs are cached apart from float ones."""
    tokens = [3, 7, 1, 9, 12, 5, 30, 2]
    wide = whole_output(Qwen2Decoder(SHAPE, tiny_weights()), tokens)
    decoder = Qwen2Decoder(SHAPE, tiny_weights())
    decoder.quantize_frozen(range(2))
    assert {name for name in decoder.packed} == {f"blk.{n}.{m}.weight" for n in range(2) for m in MATRICES}
    assert not any(f"blk.{n}.{m}.weight" in decoder.w for n in range(2) for m in MATRICES)
    assert all(f"blk.{n}.{m}.weight" in decoder.w for n in range(2, 4) for m in MATRICES)
    narrow = whole_output(decoder, tokens)
    error = ((narrow - wide).norm() / wide.norm()).item()
    assert 0 < error < 0.05
    example = TrainingExample("e", (5, 6, 7), (8, 9, 10, 11, 12), 3)
    FrozenStart(decoder, 2, example.prefix, tmp_path)(example)
    assert any((tmp_path / "below-layer-2-int8").glob("*.pt")) and not (tmp_path / "below-layer-2").exists()


def test_the_trainer_quantizes_only_the_frozen_layers_when_the_plan_says_so(tmp_path):
    for int8, folder in ((True, "below-layer-2-int8"), (False, "below-layer-2")):
        decoder = Qwen2Decoder(SHAPE, tiny_weights(), LoraWeights(LoraConfig(rank=4, top_layers=2), SHAPE))
        plan = TrainingPlan(epochs=1, batch_size=8, evaluations_per_epoch=1, frozen_int8=int8)
        LoraTrainer(decoder, plan, tmp_path / folder, progress=False, say=lambda *_: None).fit(
            copy_task(16, seed=1), copy_task(8, seed=2))
        assert bool(decoder.packed) == int8
        assert {name.split(".")[1] for name in decoder.packed} <= {"0", "1"}
        assert any((tmp_path / folder / "frozen" / folder).glob("*.pt"))
