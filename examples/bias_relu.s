; bias_relu.s: eight accumulator rows (1x4 int32 each on the `tiny` preset) minus 5, then relu,
; stored as eight rows of 1x4 int8. Written by hand; `vtaforge asm --help` explains the syntax.
;
;   vtaforge asm examples/bias_relu.s -o bias_relu.bin
;   vtaforge sim bias_relu.bin --output out=out.npy          # out.npy: 32 uint8 bytes
;   vtaforge sim bias_relu.bin --input acc=acc.npy --output out=out.npy
;                                       # acc.npy: any 128-byte array, e.g. int32 of shape (8, 4)
.config tiny

; DRAM: the micro-op table at micro-op 32 (byte 0x80), the accumulator rows at byte 0 (8 x 16
; bytes: the int32 values 0, 1, ..., 31), the output rows at byte 0x100 (8 x 4 bytes).
.uop_base 32
.uop dst_idx=0 src_idx=0
.segment acc 0x0
.data 0000000001000000020000000300000004000000050000000600000007000000
.data 08000000090000000a0000000b0000000c0000000d0000000e0000000f000000
.data 1000000011000000120000001300000014000000150000001600000017000000
.data 18000000190000001a0000001b0000001c0000001d0000001e0000001f000000
.region out 0x100 32

; compute loads the 8 ACC rows (dram_base counts 16-byte ACC elements) and the micro-op.
LOAD memory_type=ACC sram_base=0 dram_base=0 y_size=1 x_size=8 x_stride=8
LOAD memory_type=UOP sram_base=0 dram_base=32 y_size=1 x_size=1 x_stride=1
; one micro-op walked over rows 0..7 by the inner loop: ACC[r] = ACC[r] + (-5), then max 0.
ALU uop_bgn=0 uop_end=1 iter_out=1 iter_in=8 dst_factor_in=1 src_factor_in=1 alu_opcode=ADD use_imm=1 imm=-5
ALU uop_bgn=0 uop_end=1 iter_out=1 iter_in=8 dst_factor_in=1 src_factor_in=1 alu_opcode=MAX use_imm=1 imm=0 push_next_dep=1
; store waits for compute's token, writes the 8 OUT rows (4-byte elements: byte 0x100 is
; element 64) and hands a token back ...
STORE memory_type=OUT sram_base=0 dram_base=64 y_size=1 x_size=8 x_stride=8 pop_prev_dep=1 push_prev_dep=1
; ... which compute takes in a no-op (an empty micro-op load), so FINISH comes after the store.
LOAD memory_type=UOP sram_base=0 dram_base=0 y_size=0 x_size=0 x_stride=0 pop_next_dep=1
FINISH
