"""The STCP920 command set as plain Python data: what the npu dialect spells, the emulator
runs and `.stcobj` stores.

`program` defines every command kind once (`OPS`) and the `Program` representation;
`check` holds the static checks shared by the npu dialect's verifier and the emulator's
load-time checks. Pure Python + numpy: both the dialect and the emulator build on it, so
neither depends on the other.
"""
