import Convolution
import Workgroup
public enum ConvolverNodePlaceholder {}
