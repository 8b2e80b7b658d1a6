public enum ConvolutionPlaceholder {}
