; The guest of the Bochs fidelity harness, 64-bit (4-level paging): runs the command list
; the harness wrote, one access per command. Assembled with nasm -D GV=... (the guest
; linear base of the harness pages). See guest.inc for the layout.
bits 64
default rel
%include "guest.inc"
org GV
%define GREL(off) ($$ + (off))

kcode:
next:
    lea rsp, [GREL(0x4000)]
    mov rsi, [GREL(0x2000)]
    add qword [GREL(0x2000)], 16
    mov eax, [rsi]
    mov r8d, [rsi + 4]
    mov rbx, [rsi + 8]
    movzx edx, r8b
    cmp eax, 1
    je op_read
    cmp eax, 2
    je op_write
    cmp eax, 3
    je op_fetch
    cmp eax, 4
    je op_mov_cr3
    cmp eax, 5
    je op_invlpg
    cmp eax, 6
    je op_vmfunc
    cmp eax, 7
    je op_vmcall
    cmp eax, 8
    je op_pte_write
    mov eax, END_MAGIC
    vmcall
    jmp $

op_read:
    invlpg [rbx]
    lea rax, [u_read]
    test r8d, 0x100
    jnz to_user
k_read:
    mov cl, [rbx]
    jmp next

op_write:
    invlpg [rbx]
    lea rax, [u_write]
    test r8d, 0x100
    jnz to_user
k_write:
    mov [rbx], dl
    jmp next

op_fetch:
    invlpg [rbx]
    lea rax, [u_fetch]
    test r8d, 0x100
    jnz to_user
k_fetch:
    call rbx
    jmp next

op_mov_cr3:
k_mov_cr3:
    mov cr3, rbx
    jmp next

op_invlpg:
k_invlpg:
    invlpg [rbx]
    jmp next

op_vmfunc:
    mov eax, r8d
    mov ecx, ebx
k_vmfunc:
    vmfunc
    jmp next

op_vmcall:
    xor eax, eax
k_vmcall:
    vmcall
    jmp next

op_pte_write:
pte_point:
    nop
    invlpg [rbx]
    jmp next

; to ring 3 at rax, on the user stack
to_user:
    push SEL_UDATA
    lea rcx, [GREL(0x5000)]
    push rcx
    push 0x3002                     ; RFLAGS: IOPL 3 (stray I/O exits, see plan.py)
    push SEL_UCODE
    push rax
    iretq

; every exception (vectors 0-31) and the way back from ring 3 (int 0x81) land here:
; the stack is reset at next
fault_entry:
    jmp next
back_entry:
    jmp next

; the offsets the harness needs, at a fixed place
times 0xf00 - ($ - $$) int3
labels:
    dd next - $$, k_read - $$, k_write - $$, k_fetch - $$, k_mov_cr3 - $$, k_invlpg - $$
    dd k_vmfunc - $$, k_vmcall - $$, pte_point - $$, fault_entry - $$, back_entry - $$
    dd u_read - $$, u_write - $$, u_fetch - $$
times 0x1000 - ($ - $$) int3

; the user page
u_read:
    mov cl, [rbx]
    int 0x81
u_write:
    mov [rbx], dl
    int 0x81
u_fetch:
    call rbx
    int 0x81
times 0x2000 - ($ - $$) int3
