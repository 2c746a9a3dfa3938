"""`ReaderFinetune`: DSPy's BootstrapFinetune for the local reader, trained on the CPU.

It plans a prompt for every training question as RAFT does (programs/compile/reader_targets.py: passages shuffled,
refusals among distractors), chooses the examples of a limited run, writes their replies (the reader's own right
replies, kept in a reply file so that each prompt is asked once; hinted ones; reference answers; refusals), renders
each as the exact chat the program sends llama.cpp, trains a LoRA adapter on the replies (programs/train/), and
returns the program answering through the packaged model with that adapter.
Training starts from the adapter the student already answers with (the shipped reader, by default), so a book's
own compile trains on top of it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bookrag.disk_space import MB, disk_full_is_an_error, require_free
from bookrag.errors import ConfigError, DatasetError
from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.compile.artifact import ADAPTER_FILE, project_relative
from programs.compile.example_choice import choose_targets
from programs.compile.finetune_settings import FinetuneSettings
from programs.compile.reader_replies import ReplyFile
from programs.compile.reader_targets import ReaderTarget, plan_targets, reader_targets
from programs.lm.chat_adapter import REPLY_END, BookChatAdapter
from programs.lm.language_model import LocalLM, lm_adapter, with_adapter
from programs.lm.llama_cpp_engine import LlamaCppEngine
from programs.lm.reader_adapter import ReaderAdapter
from programs.train.cpu import cpu_description, training_precision

HELD_OUT_SHARE = 0.1  # of the training examples, held out for early stopping (at least 8)
# Room the training needs: the frozen layers' outputs (1-3 MB an example), two checkpoints, the adapter.
TRAINING_SPACE = 2_000 * MB
REPLIES_FILE = "replies.jsonl"  # a book's compile keeps the reader's replies to its training prompts here


class ReaderFinetune:
    def __init__(self, settings: FinetuneSettings, folder: str | Path, progress: bool | None = None, *,
                 say: Callable[[str], None], replies_file: str | Path | None = None):
        """`replies_file`: where the base reader's replies to the training prompts are kept (`ReplyFile`); default
        `<folder>/replies.jsonl`."""
        self.settings, self.folder, self.progress, self.say = settings, Path(folder), progress, say
        self.replies_file = Path(replies_file) if replies_file is not None else self.folder / REPLIES_FILE

    def compile(self, student, trainset: list[Question]):
        """A copy of `student` answering with a LoRA adapter trained on `trainset` (`<folder>/adapter.gguf`); its
        LM's adapter carries the record of the training, for the manifest (`lm_adapter`)."""
        compiled = student.deepcopy()
        compiled.lm = with_adapter(student.lm, self.fit([("book", student, trainset)]))
        return compiled

    def targets(self, books: list[tuple[str, object, list[Question]]]) -> tuple[list[tuple[str, object, ReaderTarget]],
                                                                                 int]:
        """(book name, program, target) of each chosen example of every book (`choose_targets`), the answers' replies taken from
        the reply file or asked for and saved there; and how many prompts were planned. `books`: (name, program,
        questions); every program must answer through the same local model and adapter."""
        lm = _one_local_lm(program for _, program, _ in books)
        plan = self.settings.plan
        planned = [(name, program, p) for name, program, questions in books
                   for p in plan_targets(program, questions, name, plan.seed, self.progress)]
        chosen = {id(p) for p in choose_targets([p for _, _, p in planned], plan.examples, plan.seed)}
        replies = ReplyFile(self.replies_file, lm.engine.identity) if self.settings.bootstrap else None
        targets = []
        for name, program, _ in books:
            plans = [p for book, _, p in planned if book == name and id(p) in chosen]
            targets += [(name, program, t) for t in reader_targets(program, plans, name, replies, self.progress)]
        if replies is not None:
            self.say(f"Replies: {replies.asked} asked of the reader now, the rest read from {replies.path}")
        return targets, len(planned)

    def fit(self, books: list[tuple[str, object, list[Question]]]) -> ReaderAdapter:
        """Train one adapter on the questions of several books, each with its name and its own program (its own
        index), and write it to `<folder>/adapter.gguf`; return it with the record of its training. Every program
        must answer through the same local model and adapter."""
        from programs.train.adapter_file import write_adapter
        from programs.train.trainer import LoraTrainer

        started = time.perf_counter()
        lm = _one_local_lm(program for _, program, _ in books)
        engine, base = lm.engine, lm_adapter(lm)
        require_free(self.folder, TRAINING_SPACE)
        chosen, planned = self.targets(books)
        targets = [t for _, _, t in chosen]
        messages = {f"{name}:{t.id}": finetune_messages(program, t) for name, program, t in chosen}
        train, held_out = held_out_split(_examples(engine, messages), self.settings.plan.seed)
        if not train:
            raise DatasetError("no training question gave a reply to learn (answerable ones need key facts and a "
                               "reference answer, and must-refuse ones are taught the refusal): add questions")
        decoder = self._decoder(engine, base)
        places = fact_places(targets)
        self.say(f"Training the reader on {len(train)} examples (held out for early stopping: {len(held_out)}); "
                 f"targets: {_sources(targets)} (chosen from {planned}); the first key fact's passage, best-first "
                 f"{places['best_first']} -> shown {places['shown']}")
        # The frozen layers' outputs and the checkpoint belong to this base model (and adapter).
        work = self.folder / "training" / hashlib.sha256(engine.identity.encode()).hexdigest()[:12]
        with disk_full_is_an_error(self.folder):
            record = LoraTrainer(decoder, self.settings.plan, work, self.progress, say=self.say).fit(train, held_out)
            adapter = write_adapter(decoder.lora, self.folder / ADAPTER_FILE)
        return ReaderAdapter(adapter, training={
            "base_adapter": project_relative(base.path) if base else None,
            # The settings it ran with: the LoRA's shape is the base adapter's when it goes on from one.
            **dataclasses.replace(self.settings, lora=decoder.lora.config).as_dict(),
            "data_sha256": hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest(),
            "targets": len(targets), "targets_planned": planned, "sources": _counts(t.source for t in targets),
            "styles": _counts(t.style or ("must-refuse" if t.source == "refusal" else "other") for t in targets),
            "fact_passage": places,
            **record.as_dict(), "minutes": round((time.perf_counter() - started) / 60, 1),
            "cpu": cpu_description(), "precision": str(decoder.dtype).removeprefix("torch."),
        })

    def _decoder(self, engine: LlamaCppEngine, base: ReaderAdapter | None):
        """The packaged model in torch, with LoRA weights: those of `base`, the adapter the student answers with,
        when it has one."""
        import torch

        from programs.train.adapter_file import adapter_config, read_adapter
        from programs.train.gguf_weights import read_gguf
        from programs.train.lora import LoraWeights
        from programs.train.qwen2 import Qwen2Decoder

        with progress_bar("Reading the model's weights", 1, self.progress) as bar:
            shape, tensors = read_gguf(engine.model_path(), progress=lambda done, total: bar.advance(1 / total))
        config = self.settings.lora
        if base is not None:  # go on from the adapter the program answers with, in its own shape
            config = adapter_config(base.path, shape, config.dropout)
        lora = LoraWeights(config, shape, seed=self.settings.plan.seed)
        if base is not None:
            lora.start_from(*read_adapter(base.path))
        return Qwen2Decoder(shape, tensors, lora, getattr(torch, training_precision()))


def check_can_train(settings) -> None:
    """Before any work: the local model, a qwen2 one, and the packages training needs (ConfigError, exit 2)."""
    if settings.lm != "local":
        raise ConfigError(f"the finetune optimizer trains the local model, not {settings.lm}: set BOOKRAG_LM=local "
                          "(or --lm local)")
    missing = [name for name in ("torch", "gguf") if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"training the reader needs {' and '.join(missing)}: pip install -e \".[train]\" (after "
                          "`pip install torch==2.13.0`, the CPU build; `make setup` does both)")
    if settings.local_model is not None:
        from programs.train.model_shape import model_shape

        model_shape(settings.local_model)  # a GGUF of another architecture is refused now, not after the targets


def finetune_messages(program, target: ReaderTarget) -> list[dict[str, str]]:
    """The chat the program sends for `target`'s inputs, ending with `target`'s reply (DSPy's finetune format); the
    reply stops after its last field, without ChatAdapter's end marker, which nobody reads (the end of turn follows)."""
    predict = program.generate.predict
    data = BookChatAdapter().format_finetune_data(predict.signature, predict.demos, target.inputs, target.outputs)
    *chat, reply = data["messages"]
    return [*chat, {**reply, "content": reply["content"].split(REPLY_END)[0].rstrip()}]


def held_out_split(examples: list, seed: int) -> tuple[list, list]:
    """(train, held out): a seeded HELD_OUT_SHARE of the examples (at least 8 when there are 40 or more) held out for
    early stopping."""
    shuffled = random.Random(seed).sample(examples, len(examples))
    n = max(8, round(HELD_OUT_SHARE * len(shuffled))) if len(shuffled) >= 40 else 0
    return shuffled[n:], shuffled[:n]


def _examples(engine: LlamaCppEngine, messages: dict[str, list[dict[str, str]]]):
    from programs.train.examples import shared_prefix, training_example

    return shared_prefix([training_example(engine, example_id, chat) for example_id, chat in messages.items()])


def _one_local_lm(programs) -> LocalLM:
    """The local LM every program answers through (ConfigError for a hosted one, or for two models or adapters)."""
    lms = {}
    for program in programs:
        if not isinstance(program.lm, LocalLM):
            raise ConfigError("the finetune optimizer trains the local model: set BOOKRAG_LM=local (or --lm local)")
        lms[program.lm.engine.identity] = program.lm
    if len(lms) != 1:
        raise ConfigError("the books' programs answer through different models or adapters: train them with one "
                          "BOOKRAG_LOCAL_MODEL and BOOKRAG_LOCAL_ADAPTER")
    return lms.popitem()[1]


def fact_places(targets: list[ReaderTarget]) -> dict[str, dict[int, int]]:
    """How many answer targets have their first key fact in passage 1, 2, ...: best-first (as retrieved) and as
    shown (the training's order)."""
    places = [t.fact_passage for t in targets if t.fact_passage is not None]
    return {"best_first": dict(sorted(Counter(b for b, _ in places).items())),
            "shown": dict(sorted(Counter(s for _, s in places).items()))}


def _sources(targets: list[ReaderTarget]) -> str:
    return ", ".join(f"{n} {source}" for source, n in _counts(t.source for t in targets).items())


def _counts(values) -> dict[str, int]:
    return dict(sorted(Counter(values).items()))
