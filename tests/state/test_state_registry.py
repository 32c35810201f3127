"""register_state_type: the forms it accepts, its default ids, and the clashes it refuses."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import msgspec
import pytest

from checkflow import state


def test_bare_decorator_registers_under_module_qualname() -> None:
    @state.register_state_type
    class Bare(msgspec.Struct):
        x: int

    assert state.is_registered(Bare)
    assert state.to_builtins(Bare(1))["$type"] == f"{__name__}.{Bare.__qualname__}"


def test_decorator_with_type_id_uses_that_id() -> None:
    @state.register_state_type(type_id="tests.registry.Renamed")
    @dataclasses.dataclass
    class Renamed:
        x: int

    assert state.to_builtins(Renamed(1)) == {"$type": "tests.registry.Renamed", "$value": {"x": 1}}


def test_register_returns_the_class_itself() -> None:
    class Level(enum.Enum):
        ONE = 1

    assert state.register_state_type(Level) is Level


def test_unregistered_class_is_not_registered() -> None:
    class Unknown(msgspec.Struct):
        pass

    assert not state.is_registered(Unknown)


def test_subclass_of_a_registered_class_needs_its_own_registration() -> None:
    @state.register_state_type
    class Base(msgspec.Struct):
        x: int

    class Derived(Base):
        pass

    assert not state.is_registered(Derived)


def test_registering_identically_again_is_a_no_op() -> None:
    @state.register_state_type(type_id="tests.registry.Twice")
    class Twice(msgspec.Struct):
        x: int

    state.register_state_type(Twice, type_id="tests.registry.Twice")
    assert state.decode(state.encode(Twice(2))) == Twice(2)


def test_same_type_id_for_another_class_is_refused() -> None:
    @state.register_state_type(type_id="tests.registry.Taken")
    class First(msgspec.Struct):
        pass

    class Second(msgspec.Struct):
        pass

    with pytest.raises(ValueError, match=r"tests\.registry\.Taken.*already registered"):
        state.register_state_type(Second, type_id="tests.registry.Taken")
    assert not state.is_registered(Second)


def test_same_class_under_another_id_is_refused() -> None:
    @state.register_state_type(type_id="tests.registry.Original")
    class Moving(msgspec.Struct):
        pass

    with pytest.raises(ValueError, match=r"already registered as 'tests\.registry\.Original'"):
        state.register_state_type(Moving, type_id="tests.registry.Other")


def test_same_class_and_id_with_another_codec_is_refused() -> None:
    class Pair:
        pass

    state.register_state_type(
        Pair, type_id="tests.registry.Pair", encoder=lambda p: 1, decoder=lambda r: Pair()
    )
    with pytest.raises(ValueError, match="another encoder/decoder"):
        state.register_state_type(
            Pair, type_id="tests.registry.Pair", encoder=lambda p: 2, decoder=lambda r: Pair()
        )


def test_encoder_without_decoder_is_refused() -> None:
    class Half:
        pass

    with pytest.raises(ValueError, match="both encoder and decoder"):
        state.register_state_type(Half, encoder=lambda h: None)


def test_class_without_a_default_codec_is_refused() -> None:
    class Plain:
        pass

    with pytest.raises(TypeError, match="no default state codec"):
        state.register_state_type(Plain)


@pytest.mark.parametrize("builtin", [tuple, dict, int, bytes])
def test_codec_builtins_cannot_be_registered(builtin: type[Any]) -> None:
    with pytest.raises(ValueError, match="built into the state codec"):
        state.register_state_type(builtin, encoder=lambda v: v, decoder=lambda v: v)


def test_codec_reserved_type_ids_cannot_be_taken() -> None:
    class Sneaky(msgspec.Struct):
        pass

    with pytest.raises(ValueError, match="reserved"):
        state.register_state_type(Sneaky, type_id="builtins.tuple")


def test_non_class_is_refused() -> None:
    with pytest.raises(TypeError, match="expects a class"):
        state.register_state_type(lambda: None)  # type: ignore[call-overload]


def test_registered_type_and_state_type_id_look_each_other_up() -> None:
    @state.register_state_type(type_id="tests.registry.LookedUp")
    @dataclasses.dataclass
    class LookedUp:
        x: int

    assert state.registered_type("tests.registry.LookedUp") is LookedUp
    assert state.state_type_id(LookedUp) == "tests.registry.LookedUp"


def test_lookups_answer_none_for_what_is_not_registered() -> None:
    class Stranger:
        pass

    assert state.registered_type("tests.registry.NeverRegistered") is None
    assert state.registered_type("os.system") is None
    assert state.state_type_id(Stranger) is None
