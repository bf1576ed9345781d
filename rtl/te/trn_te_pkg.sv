// Tensor Engine package: command encoding and interface widths shared by the engine's modules.
package trn_te_pkg;

  // Engine operations (one command per handshake on the cmd stream).
  typedef enum logic {
    OP_LOAD_STATIONARY = 1'b0,  // load K partition rows of the stationary tile into the array
    OP_MULTIPLY_MOVING = 1'b1   // stream N moving columns through the array, one result column each
  } te_op_e;

  // ---- GENERATED from spec/isa.json by scripts/gen-isa.cmake (make isa-gen): do not edit this region
  // Largest moving free size N of one MultiplyMoving: one PSUM bank of FP32 (BRIEF section 2) (C++ isa::kMaxMovingN).
  localparam int unsigned NMAX = 512;
  // Partitions one PE contracts per cycle with operands of dtype code `code` (BRIEF section 3 rule 8: 2 for FP8,
  // double-row; C++ isa::te_pe_partitions); 0 for an illegal code.
  function automatic logic [1:0] dtype_pe_partitions(logic [2:0] code);
    unique case (code)
      3'd0: return 2'd1;  // bf16
      3'd1: return 2'd1;  // fp16
      3'd2: return 2'd2;  // fp8e4m3
      3'd3: return 2'd2;  // fp8e5m2
      3'd5: return 2'd2;  // mxfp8e4m3
      3'd6: return 2'd2;  // mxfp8e5m2
      3'd7: return 2'd2;  // mxfp4
      default: return 2'd0;
    endcase
  endfunction
  // ---- END GENERATED
  localparam int unsigned N_W  = $clog2(NMAX + 1);  // width of the N field (1..512)

endpackage
