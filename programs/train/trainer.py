"""LoRA training on the CPU: seeded order, AdamW with warm-up and cosine decay, a held-out dev loss for early
stopping, a checkpoint after every step so that a killed run resumes where it stopped, and a time limit after which
the run ends with the weights of its best held-out loss.

A step takes a batch of examples that share the prompt prefix: the prefix goes through the adapted layers once,
and every example of the batch attends to its keys and values (`Qwen2Decoder.run`). The loss is the mean
cross-entropy of the reply tokens only.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from bookrag.atomic_file import atomic_write
from bookrag.progress import progress_bar
from programs.train.examples import TrainingExample
from programs.train.frozen_start import FrozenStart
from programs.train.qwen2 import Qwen2Decoder
from programs.train.training_plan import TrainingPlan

CHECKPOINT = "checkpoint.pt"
SORT_BATCHES = 4  # batches whose examples are sorted by length together (less padding, order still seeded)


@dataclass
class TrainingRecord:
    """What the manifest says of a training run."""

    examples: int
    dev_examples: int
    steps: int = 0
    train_loss: list[tuple[int, float]] = field(default_factory=list)  # (step, mean loss of the step's batch)
    dev_loss: list[tuple[int, float]] = field(default_factory=list)  # (step, mean reply-token loss on dev)
    best_step: int = 0
    stopped_early: bool = False
    out_of_time: bool = False  # stopped by the plan's minutes
    seconds: float = 0.0

    @property
    def best_dev_loss(self) -> float | None:
        return min((loss for _, loss in self.dev_loss), default=None)

    def as_dict(self) -> dict:
        return {**asdict(self), "best_dev_loss": self.best_dev_loss}


class LoraTrainer:
    def __init__(self, decoder: Qwen2Decoder, plan: TrainingPlan, folder: str | Path, progress: bool | None = None,
                 *, say: Callable[[str], None]):
        if decoder.lora is None:
            raise ValueError("the decoder has no LoRA weights to train")
        self.decoder, self.lora, self.plan = decoder, decoder.lora, plan
        self.folder, self.progress, self.say = Path(folder), progress, say
        self.adapted = self.lora.config.layers(decoder.shape)

    def fit(self, train: list[TrainingExample], dev: list[TrainingExample]) -> TrainingRecord:
        """Train on `train`, keep the LoRA weights of the best dev loss, and return the run's record. A checkpoint of
        the same data and settings in the folder is resumed."""
        started = time.perf_counter()
        prefixes = {e.prefix for e in [*train, *dev]}
        if len(prefixes) != 1:
            raise ValueError("training examples must share one prompt prefix (see examples.shared_prefix)")
        if self.plan.frozen_int8:
            self.decoder.quantize_frozen(range(self.adapted.start))
        frozen = FrozenStart(self.decoder, self.adapted.start, prefixes.pop(), self.folder / "frozen")
        with progress_bar("Frozen layers, once per example", len(train) + len(dev), self.progress) as bar:
            for example in [*train, *dev]:
                frozen(example)
                bar.advance()
        optimizer = torch.optim.AdamW(self.lora.parameters(), lr=self.plan.learning_rate, weight_decay=0.0)
        batches = math.ceil(len(train) / self.plan.batch_size)
        total = batches * self.plan.epochs
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_cosine(self.plan.warmup_steps, total))
        record, best = TrainingRecord(len(train), len(dev)), None
        fingerprint = self._fingerprint(train, dev)
        resumed = self._resume(fingerprint, optimizer, schedule)
        if resumed is None:
            torch.manual_seed(self.plan.seed)  # LoRA's dropout: a run is repeatable, and a resumed run goes on as one
            if dev:  # where training starts (the model, or the adapter trained on) is a candidate too
                best = self._evaluate(frozen, dev, record, best)
        else:
            record, best = resumed
            self.say(f"Resuming the training at step {record.steps} of {total}")
        evaluate_at = _evaluation_steps(batches, self.plan.epochs, self.plan.evaluations_per_epoch)
        with progress_bar("Training the reader (LoRA)", total, self.progress) as bar:
            bar.advance(record.steps)
            while record.steps < total and not record.stopped_early:
                record.out_of_time = self._out_of_time(record.seconds + time.perf_counter() - started)
                if record.out_of_time:
                    if dev and record.dev_loss[-1][0] != record.steps:  # the weights it stops with are a candidate
                        best = self._evaluate(frozen, dev, record, best)
                        record.seconds = round(record.seconds + time.perf_counter() - started, 1)
                        self._save(fingerprint, optimizer, schedule, record, best)
                    self.say(f"Stopping the training at step {record.steps} of {total}: {self.plan.minutes:g} "
                             "minutes have passed")
                    break
                epoch, index = divmod(record.steps, batches)
                order = _epoch_order(train, self.plan.seed, epoch, self.plan.batch_size)
                batch = order[index * self.plan.batch_size:][: self.plan.batch_size]
                self.lora.train()
                loss = self._loss(frozen, batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                record.steps += 1
                record.train_loss.append((record.steps, round(loss.item(), 4)))
                if record.steps in evaluate_at and dev:
                    best = self._evaluate(frozen, dev, record, best)
                record.seconds = round(record.seconds + time.perf_counter() - started, 1)
                started = time.perf_counter()
                self._save(fingerprint, optimizer, schedule, record, best)
                bar.advance()
        if best is not None:
            self.lora.load_state_dict(best)
        self.lora.eval()
        return record

    def _out_of_time(self, seconds: float) -> bool:
        return self.plan.minutes is not None and seconds >= 60 * self.plan.minutes

    def dev_loss(self, frozen: FrozenStart, dev: list[TrainingExample]) -> float:
        """Mean reply-token loss on `dev`, without dropout or gradients."""
        self.lora.eval()
        total = tokens = 0.0
        with torch.no_grad():
            for start in range(0, len(dev), self.plan.batch_size):
                batch = dev[start:start + self.plan.batch_size]
                count = sum(len(e.tokens) - e.reply_start for e in batch)
                total += self._loss(frozen, batch).item() * count
                tokens += count
        return total / tokens

    def _evaluate(self, frozen, dev, record: TrainingRecord, best):
        loss = round(self.dev_loss(frozen, dev), 4)
        previous = record.best_dev_loss
        record.dev_loss.append((record.steps, loss))
        if previous is None or loss < previous:
            record.best_step = record.steps
            return {k: v.detach().clone() for k, v in self.lora.state_dict().items()}
        since = [s for s, _ in record.dev_loss if s > record.best_step]
        record.stopped_early = len(since) >= self.plan.patience
        return best

    def _loss(self, frozen: FrozenStart, batch: list[TrainingExample]) -> torch.Tensor:
        """Mean cross-entropy of the batch's reply tokens."""
        prefix_kv = None
        if frozen.prefix_hidden is not None:
            _, prefix_kv = self.decoder.run(frozen.prefix_hidden, self.adapted, 0)
        padded = torch.nn.utils.rnn.pad_sequence([frozen(e) for e in batch], batch_first=True)
        # The hidden state at position j predicts token j + 1: a reply is predicted from reply_start - 1 on.
        spans = [range(e.reply_start - 1, len(e.tokens) - 1) for e in batch]
        width = max(len(span) for span in spans)
        wanted = torch.tensor([[*span, *[span[-1]] * (width - len(span))] for span in spans])
        out, _ = self.decoder.run(padded, self.adapted, frozen.prefix_length, prefix_kv, outputs=wanted)
        rows = torch.cat([out[i, :len(span)] for i, span in enumerate(spans)])
        targets = torch.tensor([t for e in batch for t in e.tokens[e.reply_start:]], dtype=torch.long)
        return F.cross_entropy(self.decoder.logits(rows), targets)

    def _fingerprint(self, train, dev) -> str:
        """The run's data and settings: a checkpoint of another run is never resumed."""
        plan = {**self.plan.as_dict(), "minutes": None}  # a run given more time goes on where it stopped
        data = json.dumps([[e.digest for e in train], [e.digest for e in dev], plan, self.lora.config.as_dict()])
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    def _save(self, fingerprint: str, optimizer, schedule, record: TrainingRecord, best) -> None:
        state = {"fingerprint": fingerprint, "lora": self.lora.state_dict(), "optimizer": optimizer.state_dict(),
                 "schedule": schedule.state_dict(), "record": asdict(record), "best": best,
                 "rng": torch.get_rng_state()}
        atomic_write(self.folder / CHECKPOINT, lambda temp: torch.save(state, temp))

    def _resume(self, fingerprint: str, optimizer, schedule):
        path = self.folder / CHECKPOINT
        if not path.is_file():
            return None
        try:
            state = torch.load(path, weights_only=True)  # tensors and plain data only: nothing is unpickled
        except Exception as exc:  # noqa: BLE001 - a cut or foreign file: start over, it is only a checkpoint
            self.say(f"Not resuming {path}: it cannot be read ({type(exc).__name__}); starting over")
            return None
        if state.get("fingerprint") != fingerprint:
            self.say(f"Not resuming {path}: it was written for other examples or settings")
            return None
        self.lora.load_state_dict(state["lora"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        record = TrainingRecord(**{**state["record"],
                                   "train_loss": [tuple(x) for x in state["record"]["train_loss"]],
                                   "dev_loss": [tuple(x) for x in state["record"]["dev_loss"]]})
        return record, state["best"]


def _epoch_order(examples: list[TrainingExample], seed: int, epoch: int, batch_size: int) -> list[TrainingExample]:
    """The examples in epoch `epoch`'s seeded order, the same on every run and after a resume; within each run of
    SORT_BATCHES batches, sorted by length, so a batch pads its examples less."""
    shuffled = random.Random(f"{seed}:{epoch}").sample(examples, len(examples))
    run = batch_size * SORT_BATCHES
    return [e for start in range(0, len(shuffled), run) for e in sorted(shuffled[start:start + run],
                                                                       key=lambda e: len(e.tokens))]


def _evaluation_steps(batches: int, epochs: int, per_epoch: int) -> set[int]:
    steps = {round(batches * (epoch + part / per_epoch)) for epoch in range(epochs) for part in range(1, per_epoch + 1)}
    return {s for s in steps if s > 0}


def _warmup_cosine(warmup: int, total: int):
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    return factor
