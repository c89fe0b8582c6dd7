// SPDX-License-Identifier: MIT
// odl_nhi_irq: the NHI's interrupt unit. Interrupt status, enable, vector
// map (IVR) and per-vector throttle registers, and the decision when a
// vector's MSI-X message goes out. Every frame whose descriptor asks for an
// interrupt passes through it. The behavioural twin is
// model/src/nhi/irq_unit.cpp; the interface is documented in docs/rtl.md.
//
// One operation per clock (req high at a rising edge); the results are
// registered and valid after that edge. Time is an input (now_ps): the
// unit keeps no clock count of its own, so the model may clock it only when
// something happens.
module odl_nhi_irq #(
    parameter int HC_MAX  = 21,  // rings per direction at most
    parameter int VECTORS = 16   // MSI-X vectors
) (
    input  logic        clk,
    input  logic        req,         // an operation this cycle
    input  logic [ 2:0] op,          // OP_* below
    input  logic [ 7:0] addr,        // register word (READ, WRITE)
    input  logic [31:0] wdata,       // WRITE
    input  logic [ 5:0] index,       // interrupt index (RAISE, EVAL)
    input  logic [ 3:0] vec,         // FIRE
    input  logic [63:0] now_ps,      // simulated time (RAISE, EVAL, FIRE)
    input  logic        auto_clear,  // READ of STATUS clears it
    input  logic [ 4:0] hop_count,   // latched by RESET
    output logic [31:0] rdata,       // READ data; WRITE of ENABLE: rising bits
    output logic        sched,       // RAISE, EVAL: schedule a FIRE of ...
    output logic [ 3:0] sched_vector,  // ... this vector ...
    output logic [63:0] sched_at_ps,   // ... at this time
    output logic        fired        // FIRE: the message goes out
);
  localparam logic [2:0] OP_RESET = 3'd1, OP_READ = 3'd2, OP_WRITE = 3'd3,
                         OP_RAISE = 3'd4, OP_EVAL = 3'd5, OP_FIRE = 3'd6;
  localparam int IDX = 64;  // status bits: TX rings, RX rings, RX overflow
  localparam int IVR_REGS = (2 * HC_MAX + 7) / 8;
  localparam logic [7:0] IVR_BASE = 8'h08;
  // Throttle unit: 256 ns.
  localparam logic [63:0] THROTTLE_UNIT_PS = 64'd256000;

  logic [IDX-1:0] status_q, enable_q;
  logic [31:0] ivr_q[IVR_REGS];
  logic [15:0] throttle_q[VECTORS];
  logic [VECTORS-1:0] pending_q, cause_q, fired_once_q;
  logic [63:0] last_q[VECTORS];
  logic [4:0] hc_q;

  // The vector an interrupt index is mapped to (4 bits per index).
  function automatic logic [3:0] ivr_of(input logic [5:0] i);
    logic [31:0] w;
    w = ivr_q[int'(i[5:3])];
    return w[{i[2:0], 2'b00}+:4];
  endfunction

  // Indices with an enable bit and a vector: TX and RX rings.
  function automatic logic ring_index(input logic [5:0] i);
    return {1'b0, i} < {1'b0, hc_q, 1'b0};
  endfunction

  // When a message for vector v may go out at the earliest (throttle).
  function automatic logic [63:0] due(input logic [3:0] v);
    logic [63:0] t;
    t = now_ps;
    if (fired_once_q[v]) begin
      logic [63:0] next;
      next = last_q[v] + {48'd0, throttle_q[v]} * THROTTLE_UNIT_PS;
      if (next > t) t = next;
    end
    return t;
  endfunction

  function automatic logic is_ivr(input logic [7:0] a);
    return a >= IVR_BASE && a < IVR_BASE + 8'(IVR_REGS);
  endfunction
  function automatic logic [2:0] ivr_reg(input logic [7:0] a);
    return 3'(a - IVR_BASE);
  endfunction

  // Register read, without side effects.
  function automatic logic [31:0] peek(input logic [7:0] a);
    logic [31:0] d;
    d = 32'd0;
    if (a <= 8'h01) d = status_q[{a[0], 5'd0}+:32];
    else if (a == 8'h04 || a == 8'h05) d = enable_q[{a[0], 5'd0}+:32];
    else if (is_ivr(a)) d = ivr_q[ivr_reg(a)];
    else if (a >= 8'h10 && a <= 8'h1f) d = {16'd0, throttle_q[a[3:0]]};
    else if (a >= 8'h20 && a <= 8'h2f)
      d = {29'd0, fired_once_q[a[3:0]], cause_q[a[3:0]], pending_q[a[3:0]]};
    else if (a >= 8'h30 && a <= 8'h4f) begin
      logic [4:0] k;
      k = 5'(a - 8'h30);
      d = last_q[k[4:1]][{k[0], 5'd0}+:32];
    end
    return d;
  endfunction

  always_ff @(posedge clk) begin
    sched <= 1'b0;
    fired <= 1'b0;
    if (req) begin
      case (op)
        OP_RESET: begin
          status_q <= '0;
          enable_q <= '0;
          for (int r = 0; r < IVR_REGS; r++) ivr_q[r] <= '0;
          for (int v = 0; v < VECTORS; v++) begin
            throttle_q[v] <= '0;
            last_q[v] <= '0;
          end
          pending_q <= '0;
          cause_q <= '0;
          fired_once_q <= '0;
          hc_q <= hop_count;
          rdata <= '0;
        end
        OP_READ: begin
          rdata <= peek(addr);
          if (addr <= 8'h01 && auto_clear) status_q[{addr[0], 5'd0}+:32] <= '0;
        end
        OP_WRITE: begin
          rdata <= '0;
          if (addr == 8'h02 || addr == 8'h03)
            status_q[{addr[0], 5'd0}+:32] <= status_q[{addr[0], 5'd0}+:32] & ~wdata;
          else if (addr == 8'h04 || addr == 8'h05) begin
            rdata <= wdata & ~enable_q[{addr[0], 5'd0}+:32];
            enable_q[{addr[0], 5'd0}+:32] <= wdata;
          end else if (addr == 8'h06 || addr == 8'h07)
            enable_q[{addr[0], 5'd0}+:32] <= enable_q[{addr[0], 5'd0}+:32] & ~wdata;
          else if (is_ivr(addr)) ivr_q[ivr_reg(addr)] <= wdata;
          else if (addr >= 8'h10 && addr <= 8'h1f) throttle_q[addr[3:0]] <= wdata[15:0];
        end
        OP_RAISE, OP_EVAL: begin
          // RAISE sets the status bit and, for a ring, the vector's cause;
          // both then schedule a message if the index is set and enabled
          // and none is pending on its vector.
          logic [3:0] v;
          logic st;
          v = ivr_of(index);
          st = status_q[index] || op == OP_RAISE;
          if (op == OP_RAISE) begin
            status_q[index] <= 1'b1;
            if (ring_index(index)) cause_q[v] <= 1'b1;
          end
          if (ring_index(index) && st && enable_q[index] && !pending_q[v]) begin
            pending_q[v] <= 1'b1;
            sched <= 1'b1;
            sched_vector <= v;
            sched_at_ps <= due(v);
          end
        end
        OP_FIRE: begin
          // Out if the vector has an unmasked ring with status set, or a
          // cause that came since its last message (its status may have
          // been cleared by the driver's handler meanwhile).
          logic unmasked, st;
          unmasked = 1'b0;
          st = 1'b0;
          for (int i = 0; i < 2 * HC_MAX; i++) begin
            if (ring_index(6'(i)) && ivr_of(6'(i)) == vec && enable_q[i]) begin
              unmasked = 1'b1;
              st = st | status_q[i];
            end
          end
          pending_q[vec] <= 1'b0;
          if (unmasked && (st || cause_q[vec])) begin
            cause_q[vec] <= 1'b0;
            last_q[vec] <= now_ps;
            fired_once_q[vec] <= 1'b1;
            fired <= 1'b1;
          end
        end
        default: ;  // OP_NOP (0), 7: nothing
      endcase
    end
  end
endmodule
