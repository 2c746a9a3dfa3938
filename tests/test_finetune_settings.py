"""A reader's training has one set of settings (FinetuneSettings), with one default each, for train_reader.py and
optimize.py --optimizer finetune alike; the manifest records them, and the training folder is under the data folder."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest
from conftest import PROJECT_ROOT

from bookrag.config import Settings
from programs.cli import optimize, train_reader
from programs.compile.finetune_settings import FinetuneSettings, training_folder
from programs.compile.optimizers import OptimizerSettings, compile_predictors
from programs.compile.reader_targets import reader_targets
from programs.train.lora_config import LoraConfig
from programs.train.training_plan import TrainingPlan


def test_both_commands_default_to_the_settings_objects_values():
    """Without flags, train_reader.py and optimize.py --optimizer finetune train as FinetuneSettings() says (it
    bootstrapped in one, and not in the other)."""
    reader = train_reader.build_parser().parse_args([])
    compile_args = optimize.build_parser().parse_args(["--optimizer", "finetune"])
    assert train_reader.reader_settings(reader) == FinetuneSettings()
    assert optimize.optimizer_settings(compile_args, Settings()).finetune == FinetuneSettings()


def test_lora_alpha_is_twice_the_rank_unless_given():
    """LoraConfig owns the alpha a rank gets (train_reader.py --rank N trains with alpha 2N); a file's own stays."""
    assert LoraConfig().alpha == 32.0 and LoraConfig(rank=8).alpha == 16.0
    assert LoraConfig(rank=8, alpha=4.0).alpha == 4.0
    assert LoraConfig.from_dict(LoraConfig(rank=8).as_dict()) == LoraConfig(rank=8)


def test_the_flags_reach_the_settings(tmp_path):
    reader = train_reader.build_parser().parse_args(["--epochs", "3", "--rank", "8", "--top-layers", "4",
                                                     "--seed", "5", "--bootstrap"])
    assert train_reader.reader_settings(reader) == FinetuneSettings(
        LoraConfig(rank=8, alpha=16.0, top_layers=4), dataclasses.replace(TrainingPlan(), epochs=3, seed=5), True)
    compile_args = optimize.build_parser().parse_args(["--optimizer", "finetune", "--epochs", "1", "--seed", "2",
                                                       "--no-bootstrap"])
    settings = Settings(data_dir=tmp_path / "data", book_dir=tmp_path / "my-book")
    optimizer = optimize.optimizer_settings(compile_args, settings)
    assert optimizer.finetune == FinetuneSettings(plan=dataclasses.replace(TrainingPlan(), epochs=1, seed=2),
                                                  bootstrap=False)
    assert optimizer.training_dir == str(tmp_path / "data" / "training" / "my-book") == str(
        training_folder(settings, "my-book"))


def test_the_number_of_examples_is_a_flag_of_both_commands():
    for parser, extra in ((train_reader.build_parser(), []), (optimize.build_parser(), ["--optimizer", "finetune"])):
        assert parser.parse_args([*extra, "--examples", "120"]).examples == 120
        assert parser.parse_args([*extra, "--examples", "all"]).examples is None


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_number_of_examples_that_is_none_exits_4_naming_it(value, capsys):
    with pytest.raises(SystemExit) as exit_:
        train_reader.build_parser().parse_args(["--examples", value])
    assert exit_.value.code == 4
    assert f"expected a number of examples (at least 1) or `all`, not {value!r}" in capsys.readouterr().err


BOTH_COMMANDS = [(train_reader.build_parser, []), (optimize.build_parser, ["--optimizer", "finetune"])]


@pytest.mark.parametrize(("build", "extra"), BOTH_COMMANDS, ids=["train_reader", "optimize"])
@pytest.mark.parametrize("value", ["nan", "-1", "-inf", "inf", "0", "soon"])
def test_minutes_that_never_stop_or_stop_before_training_exit_4_naming_the_flag(build, extra, value, capsys):
    """nan never stopped and was written as a bare NaN into the manifest; -1 wrote the untrained adapter, exit 0."""
    with pytest.raises(SystemExit) as exit_:
        build().parse_args([*extra, f"--minutes={value}"])  # "--minutes -1" would read -1 as a flag
    assert exit_.value.code == 4
    assert f"argument --minutes: expected a number of minutes above 0, like 30 or 0.5, not {value!r}" \
        in capsys.readouterr().err


@pytest.mark.parametrize(("build", "extra"), BOTH_COMMANDS, ids=["train_reader", "optimize"])
def test_a_limit_in_minutes_reaches_the_plan(build, extra):
    assert build().parse_args([*extra, "--minutes", "0.5"]).minutes == 0.5


def test_a_digit_that_is_no_number_is_named_as_the_examples_flag(capsys):
    """"²" passed isdigit() and failed int(): argparse said "invalid _examples value"."""
    with pytest.raises(SystemExit) as exit_:
        train_reader.build_parser().parse_args(["--examples", "²"])
    assert exit_.value.code == 4
    assert "argument --examples: expected a number of examples (at least 1) or `all`, not '²'" \
        in capsys.readouterr().err


def test_the_artifacts_manifest_records_the_training_settings():
    """build_manifest writes OptimizerSettings.as_dict() as the manifest's `optimizer`."""
    training = FinetuneSettings(plan=dataclasses.replace(TrainingPlan(), epochs=1), bootstrap=True)
    record = OptimizerSettings("finetune", finetune=training, training_dir="/data/training/book").as_dict()
    assert record["finetune"] == {"lora": LoraConfig().as_dict(), "plan": {**TrainingPlan().as_dict(), "epochs": 1},
                                  "bootstrap": True}
    assert record["training_dir"] == "/data/training/book"
    assert OptimizerSettings("bootstrap").as_dict()["finetune"] is None


def test_the_finetune_optimizer_without_its_settings_writes_nowhere(tmp_path, monkeypatch):
    """It trained in `training/` under whatever folder it was run from; now its folder comes from the settings."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="needs OptimizerSettings.finetune and .training_dir"):
        compile_predictors(object(), OptimizerSettings("finetune", finetune=FinetuneSettings()), [], [],
                           say=lambda *_: None)
    assert list(tmp_path.iterdir()) == []


def test_no_training_default_is_written_outside_the_settings():
    """No `epochs` or `bootstrap` of its own in the optimizer's settings, the targets or any call in programs/."""
    assert not {"epochs", "bootstrap"} & {f.name for f in dataclasses.fields(OptimizerSettings)}
    assert inspect.signature(reader_targets).parameters["replies"].default is inspect.Parameter.empty
    found = []
    for path in (PROJECT_ROOT / "programs").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg in ("epochs", "bootstrap") \
                    and isinstance(node.value, ast.Constant):
                found.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}: {node.arg}={node.value.value!r}")
    assert found == []
